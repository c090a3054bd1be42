"""Tuning: every choice of kernel that a description leaves open.

A description fixes what an operator computes; a :class:`Tuning` fixes how: which window
walk, how many outputs an invocation computes, workgroup sizes.  Every tuning computes the
same maxima, indices and integer results, bit for bit; average and Lp sums over a global
window may differ in their last bit where a walk merges a workgroup's lanes
(docs/semantics.md).  ``pg.Device`` picks the preset for its adapter's type.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from .errors import ValidationError

__all__ = ["Tuning"]


@dataclass(frozen=True)
class Tuning:
    """Which kernels a Device's operators compile to (frozen: a value, hashable).

    Two presets hold the measured choices: :meth:`for_cpu` for software adapters (lavapipe,
    llvmpipe: SIMD lanes that load one by one, so several outputs per invocation sharing
    their loads win) and :meth:`for_gpu` for GPUs (neighbouring lanes on neighbouring
    elements).  ``dataclasses.replace(Tuning.for_gpu(), outputs_per_invocation=1)`` changes
    one choice.  Maxima, indices and integer results are bit-identical under every tuning;
    a global window's average or Lp sum may differ in its last bit.

    Parameters
    ----------
    target : {"cpu", "gpu"}
        The class of device the choices were made for (``Device.tuned_for`` reads it); it
        chooses nothing itself.
    walk : {"auto", "general", "rows", "rows_tail", "rows_any", "channels", "plane"}
        The forward pooling's window walk.  ``"auto"``: the fastest one the tensors' layout
        allows, among those ``rows_walks`` and ``plane_walk`` admit.  A walk's name: that
        walk wherever the layout allows it, else ``"general"``.
    rows_walks : bool
        With ``walk="auto"``: take the rows walks (four outputs along W per invocation, from
        4-element chunks) where the input is contiguous along W: ``"rows"`` and
        ``"rows_tail"`` load each chunk at once (rows starting at multiples of 4 elements),
        ``"rows_any"`` element by element (rows starting anywhere).
    any_rows : bool
        Rows that start anywhere (widths that are no multiple of 4, inputs at offsets that
        are not 4-element aligned) take the rows walks (with ``rows_walks``) and the
        gradients' row gathers (with ``row_gathers``) too, their chunks assembled from
        single loads and the gathers' dx stored element by element; ``False``: the general
        walk and the block gathers there (lavapipe, case I, 3x3 stride 1 over 14 x 14 planes:
        max pooling 0.35x the general walk's time, its gradient 0.27x, the average's 0.20x
        the block gathers').
    plane_walk : bool
        With ``walk="auto"``: pool each whole plane (global pooling, also adaptive pooling
        to one output) as a reduction, workgroups of ``plane_lanes`` invocations each
        reducing a run of at most ``plane_part`` elements of a plane (planes contiguous
        in the input, of at least ``plane_lanes`` elements, or of any size with
        ``packed_planes``).
    plane_lanes : {4, 8, 16, 32, 64, 128, 256}
        Invocations per workgroup of the plane walk (lavapipe, case G: 8 were 2-3x faster
        than 64; GPUs: 256).
    plane_part : int
        The most elements of a plane one workgroup of the plane walk reduces, at least 1024:
        larger planes are cut into runs that several workgroups reduce, merged by a second
        pass.
    plane_workgroups : int
        The plane walk cuts planes into more runs (of at least a chunk per lane), and packed
        planes get more lanes each, until its workgroups number at least this (1: planes are
        cut by ``plane_part`` alone), so that a few planes still keep every core of a GPU
        busy.
    packed_planes : bool
        Planes of any size take the plane walk (for global pooling) with lanes sized to
        the plane: groups of a power of two lanes, each group reducing one plane, as many
        groups to a workgroup of ``plane_lanes`` as it holds (small planes: many); and the
        gradients of global pooling too (each group writes its plane's dx in 4-element
        chunks, after the plane's argmax for max pooling).  ``False``: the plane walk for
        planes of at least ``plane_lanes`` elements, one to a workgroup, and the gradients'
        other kernels.
    plane_lane_chunks : int
        With ``packed_planes``: the most 4-element chunks of a plane a lane of the plane walk
        reduces (or writes, in the gradients), unless the plane takes a whole workgroup: a
        plane of q chunks gets the smallest power of two lanes at least q /
        plane_lane_chunks, at most ``plane_lanes``.
    plane_chunks : {1, 2, 4}
        The 4-element chunks a lane of the plane walk loads per step of its loop, written
        out so that their loads are in flight together (the same bits: each lane feeds its
        chunks in the same order).
    channels_written_out : bool
        The channels walk's loops over the input rows and columns of a block's windows
        written out (where they are at most 6 each), so that a lane's loads are in flight
        together (the same taps in the same order).
    outputs_per_invocation : {1, 2}
        Neighbouring outputs along W per invocation of the general walk (it is also the
        first pass of the max pooling gradient).
    rows_per_invocation : int
        Output rows per invocation of the rows walks, 1 to 4 (fewer where the output has);
        with them, dx rows per invocation of the fractional gradient's gather.
    lines_workgroup : int
        Invocations per workgroup of the kernels over (column, line, plane) grids: the
        forward walks, the row gathers, unpooling.
    whole_workgroups : bool
        The kernels over (column, line, plane) grids number their positions flat,
        ``lines_workgroup`` to a workgroup, so that every lane of every workgroup but the last
        is busy (else workgroups hold whole lines: 56 of 64 lanes for rows of 56 columns), at
        the cost of two divisions (multiply-high) per invocation.
    flat_lines_under : int
        Those grids are numbered flat (as under ``whole_workgroups``) where a line has fewer
        than this many columns; 1: never.  CPU adapters run a workgroup's lanes as SIMD
        vectors along x, so a workgroup one column wide (unpooling 1 x 1 inputs) keeps one
        lane of each vector busy (lavapipe, case C unpooling: 0.24x the time numbered flat),
        and one four columns wide half of them (3x3 stride 1 max pooling of 14 x 14 planes,
        four outputs an invocation: 0.60x; of 20, 24, 28 wide planes, 5, 6, 7 columns:
        0.75x, 0.84x, 0.92x; but 2x2 stride 2 of case B, 7 columns: 1.06-1.10x).
    roi_align_channels : {1, 4}
        Outputs of neighbouring channels per invocation of ROI align's walk (where C is a
        multiple of it, its samples in one part, and the tensors whole): they share the
        bin's sample positions and weights (lavapipe, case ROI: 0.62-0.63x the time of
        one channel each; an H200, at GPU scale: 0.47x; RADV: 545 instructions per four
        outputs against 332 per output).
    roi_align_channels_last : bool
        ROI align, every reduction and interpolation (C a multiple of 4, an output's
        samples in one invocation, the tensors whole), over a packed channels-last input:
        the input itself where it is one, else a copy made first; four neighbouring
        channels per invocation, neighbouring lanes on neighbouring runs of them, each
        sample's elements read as 16-byte loads of four channels.  The copy is made only for
        outputs of at least the input's element count (each output reads four corners or
        more).  The same
        bits (lavapipe, case ROI, 1,000 ROIs: 0.58x the time over an NCHW input, copy
        included; over an NHWC input, 64 and 1,000 ROIs: 0.66x and 0.60x; the weighted
        maximum, 1,000 ROIs: 0.63x).
    roi_align_grad_channels : int
        The channels whose 8 x 8 blocks of dx one workgroup of ROI align's average gradient
        gathers (a power of two up to 256; at most the next one from C), one a lane: the
        weights of a region's samples on the block, the same for every channel, are computed
        once per workgroup and shared in workgroup memory, for outputs of at most 32 x 32
        (lavapipe, case ROI: 64 channels 0.50x the time of 1, 1,000 boxes 0.31x).  1: one
        block of one channel per invocation, computing them itself.
    roi_pool_channels : {1, 4}
        Outputs of neighbouring channels per invocation of ROI pooling's walk (where C is a
        multiple of it, the bins take one part and the tensors are whole), and of its
        gradient's argmax walk: they share the output's coordinates and its bin from the
        table (lavapipe, case ROI: 0.53x the time of one channel each, the gradient 0.77x).
    roi_pool_channel_lanes : bool
        With ``roi_pool_channels=4``: neighbouring lanes of ROI pooling's walk (and its
        gradient's argmax walk) on neighbouring runs of four channels of one bin, so that
        they walk the same taps (uniform control flow), each in its own planes; ``False``:
        on neighbouring bins of a plane.  The same bits (lavapipe, case ROI: the forward
        0.84-1.04x the time, the gradient 0.84-0.93x; three runs).  Its loads stay one per
        lane and tap either way, now in planes apart where they were in bins side by side.
    roi_pool_grad_channel_lanes : bool
        ROI pooling's gradient gather with neighbouring lanes on neighbouring channels of one
        8 x 8 block of dx: they visit the same ROIs and bins (uniform control flow), each
        adding its own channel's dy (lavapipe, case ROI: 0.59-0.65x the time of the gradient
        with neighbouring lanes on neighbouring blocks of a plane, 1,000 boxes 0.61-0.70x).
        ``False``: neighbouring blocks (the same bits).
    unpool_gather : bool
        Max unpooling as a gather over the output: each output element finds its winner
        among the input elements whose index is expected to name it (the windows covering
        it, for indices written by max pooling), with an atomic pick only for indices
        elsewhere, and is written once; ``False``: an atomic pick of every output element's
        winner in a scratch word, then its value scattered (dense outputs, after a zero
        fill) or gathered.  The same bits either way.
    unpool_gather_plane : int
        With ``unpool_gather``: the smallest output plane (elements of an (n, c) plane of
        the output) that takes the gather; smaller planes take the atomic pick.  On a small
        plane each input element stands for many outputs, each of which the gather visits
        (H200: 7 x 7 outputs from one input each, 1.6-2.0x the atomic pick's time; 56 x 56
        and 112 x 112 from 2 x 2 windows, 0.32-0.53x).
    fractional_walks : bool
        Fractional max pooling and its gradient by the fractional walks: a table of each
        plane's window starts, a walk over each output's window (four outputs along W per
        invocation with ``rows_walks``) and a gather over dx reading
        its covering windows from the table; ``False``: the bins walk and a gather
        searching the bin table.  The same bits either way (lavapipe, case FR: the forward
        1.7x, the gradient 4.0-4.8x faster; H200: 1.5x, 2.4x).
    paired_words : bool
        Where the forward pooling takes the general walk over 16-bit inputs contiguous along
        W (their other strides even, offsets of whole words; windows of at most 4 taps along
        W whose two neighbouring windows span at most 8 elements): two neighbouring outputs
        per invocation, each window row of the pair loaded once as the 32-bit words holding
        it, both outputs' taps taken from them (else a word per tap, half of it kept).  The
        same bits (lavapipe, case A float16, the general walk: max 1.5x, average 1.8-2.1x
        faster; H200: 1.01-1.16x).
    lp_gradient_one_pass : bool
        Lp pooling's gradient over windows that do not overlap (stride at least the dilated
        window in every dimension: 2 x 2 stride 2, global pooling) in one pass: each block of
        dx elements computes its window's result and writes its gradient, where two passes
        write each window's result into a scratch tensor and read it back.  The same bits
        (lavapipe, 2 x 2 stride 2 and 7 x 7 global windows: 0.28-0.53x the two passes' time;
        GPUs: left off until measured, since on small planes one lane per window makes
        scalar loads where the packed planes' lanes make coalesced ones).
    block_workgroup : int
        Invocations per workgroup of the gradients' block gathers.
    flat_workgroup : int
        Invocations per workgroup of the kernels numbered flat: ROI and adaptive bins,
        zero filling.
    row_gathers : bool
        Gradients over tensors contiguous along W gather 2 x 8 dx elements per invocation
        from 4-element chunks; ``False``: the block gathers.
    windows_first : bool
        The block gathers visit each window once for every dx element it reaches (where
        strides and the windows reaching an element are at most 2 per dimension);
        ``False``: a loop over each element's taps.
    fixed_window_min_row : int
        Adaptive pooling whose bins are one fixed window (each input size a multiple of the
        output's) runs the fixed-window kernels where output rows hold at least this many
        outputs (else the bin kernels, which pack outputs flat).
    shapes_in_params : bool
        The shape-generic kernels: the grids over (column, line, plane) numbered flat (as
        ``whole_workgroups``) and the plane walk's run and lanes per plane read from its
        Params uniform instead of override constants, so that one pipeline serves an
        operator at every input size (the same bits as the specialised kernels).
        :meth:`shape_generic` gives a tuning with it.
    generic_calls : int
        How many calls a newly compiled operator makes on its shape-generic pipelines
        (``shape_generic()``'s) before its specialised ones are built, where those are not
        built yet: a new input size of an operator already used then builds nothing on its
        first calls (a pipeline costs 0.1-1 s on lavapipe with a cold shader cache), and one
        that repeats gets the specialised pipelines from its next call.  0: every operator
        builds its specialised pipelines when compiled.
    loop_budget : int
        The most loop iterations one invocation of a kernel may run, 256 to 32768: longer
        windows, bins and planes are split into parts that several invocations walk, merged
        by further passes in a fixed order (docs/semantics.md).  Software adapters end an
        invocation's loops after 65535 iterations in all, without an error.

    Every field has the default of :meth:`for_cpu`; :meth:`for_gpu` lists where the GPU
    preset differs.

    Raises
    ------
    ValidationError
        Naming the field whose value is out of range or of the wrong type.
    """

    target: str = "cpu"
    walk: str = "auto"
    rows_walks: bool = True
    any_rows: bool = True
    plane_walk: bool = True
    plane_lanes: int = 8
    plane_part: int = 16384
    plane_workgroups: int = 1
    packed_planes: bool = True
    plane_lane_chunks: int = 16
    plane_chunks: int = 1
    channels_written_out: bool = False
    outputs_per_invocation: int = 1
    rows_per_invocation: int = 4
    lines_workgroup: int = 64
    whole_workgroups: bool = False
    flat_lines_under: int = 7
    roi_align_channels: int = 4
    roi_align_channels_last: bool = True
    roi_align_grad_channels: int = 64
    roi_pool_channels: int = 4
    roi_pool_channel_lanes: bool = True
    roi_pool_grad_channel_lanes: bool = True
    unpool_gather: bool = False
    unpool_gather_plane: int = 1
    fractional_walks: bool = True
    paired_words: bool = True
    lp_gradient_one_pass: bool = True
    block_workgroup: int = 64
    flat_workgroup: int = 64
    row_gathers: bool = True
    windows_first: bool = True
    fixed_window_min_row: int = 8
    shapes_in_params: bool = False
    generic_calls: int = 2
    loop_budget: int = 32768

    def __post_init__(self) -> None:
        if self.target not in ("cpu", "gpu"):
            raise ValidationError("target", f"expected 'cpu' or 'gpu', got {self.target!r}")
        from .kernels.window import WALKS   # (the walks are the kernel layer's, which imports this module)
        if self.walk != "auto" and self.walk not in WALKS:
            raise ValidationError("walk", f"expected one of auto, {', '.join(WALKS)}, got {self.walk!r}")
        for field in fields(self):
            value = getattr(self, field.name)
            if field.type == "bool" and not isinstance(value, bool):
                raise ValidationError(field.name, f"expected True or False, got {value!r}")
            least = 0 if field.name == "generic_calls" else 1
            if field.type == "int" and (not isinstance(value, int) or isinstance(value, bool) or value < least):
                raise ValidationError(field.name, f"expected {'an int >= 0' if least == 0 else 'a positive int'}, "
                                                  f"got {value!r}")
        if self.outputs_per_invocation > 2:
            raise ValidationError("outputs_per_invocation", f"expected 1 or 2, got {self.outputs_per_invocation}")
        if self.rows_per_invocation > 4:
            raise ValidationError("rows_per_invocation", f"expected 1 to 4, got {self.rows_per_invocation}")
        if self.plane_lanes not in (4, 8, 16, 32, 64, 128, 256):  # (window_walk_plane.wgsl's tree halves them)
            raise ValidationError("plane_lanes", f"expected 4, 8, 16, 32, 64, 128 or 256, got {self.plane_lanes}")
        if self.roi_align_channels not in (1, 4):
            raise ValidationError("roi_align_channels", f"expected 1 or 4, got {self.roi_align_channels}")
        if self.roi_pool_channels not in (1, 4):
            raise ValidationError("roi_pool_channels", f"expected 1 or 4, got {self.roi_pool_channels}")
        if self.roi_align_grad_channels not in (1, 2, 4, 8, 16, 32, 64, 128, 256):
            raise ValidationError("roi_align_grad_channels", f"expected a power of two from 1 to 256, "
                                                             f"got {self.roi_align_grad_channels}")
        if self.plane_chunks not in (1, 2, 4):
            raise ValidationError("plane_chunks", f"expected 1, 2 or 4, got {self.plane_chunks}")
        if self.plane_part < 1024:
            raise ValidationError("plane_part", f"expected at least 1024 elements, got {self.plane_part}")
        if not 256 <= self.loop_budget <= 32768:  # (the kernels' loops other than the split ones fit in the rest)
            raise ValidationError("loop_budget", f"expected 256 to 32768 iterations, got {self.loop_budget}")
        for name in ("lines_workgroup", "block_workgroup", "flat_workgroup"):
            if getattr(self, name) > 256:  # WebGPU's guaranteed max-compute-invocations-per-workgroup
                raise ValidationError(name, f"expected at most 256 invocations, got {getattr(self, name)}")

    def shape_generic(self) -> "Tuning":
        """This tuning's shape-generic form: ``shapes_in_params`` and ``whole_workgroups``
        set, ``generic_calls`` 0 (an operator compiled under it is already generic).

        Returns
        -------
        Tuning
        """
        return replace(self, shapes_in_params=True, whole_workgroups=True, generic_calls=0)

    @classmethod
    def for_cpu(cls) -> "Tuning":
        """The choices for software adapters: the rows walks, one output per invocation of
        the general walk.

        Returns
        -------
        Tuning
            ``Tuning()``: every field at its default.
        """
        return cls()

    @classmethod
    def for_gpu(cls) -> "Tuning":
        """The choices for GPUs: no rows walks (measured on an H100, case A: 2-4x slower
        than the general walk), two outputs per invocation of the general walk (1.2-1.6x
        faster than one; four were 0.8-0.9x as fast as two), the plane walk for global
        pooling with workgroups of 256 invocations, and workgroups of 256 invocations over
        (column, line, plane) grids (H100, case A at GPU scale: 0.90-0.98x the time of 64).
        On an H200 (docs/performance.md, 2026-11-28), against the kernels they replace:
        packed planes of at most 4 chunks a lane (case C, 7x7 planes: 0.12-0.43x the time),
        unpooling as a gather on output planes of at least 256 elements (cases A and B,
        12544 and 3136: 0.32-0.53x; case C, 49: 1.6-2.0x, so it keeps the atomic pick; the
        ratios' log-linear interpolation crosses 1 near 260), the fractional walks (0.66x, the
        gradient 0.41x), the channels walk written out (NHWC: 0.73-0.80x), 16-bit pairs
        (0.86-0.99x); ROI align by four channels an invocation (case ROI at GPU scale: 0.47x
        the time of one).

        Returns
        -------
        Tuning
            ``target="gpu"``, ``rows_walks=False``, ``plane_walk=True``, ``plane_lanes=256``,
            ``outputs_per_invocation=2``, ``lines_workgroup=256``, ``plane_lane_chunks=4``,
            ``channels_written_out=True``, ``unpool_gather=True``, ``unpool_gather_plane=256``,
            ``lp_gradient_one_pass=False``, ``flat_lines_under=1``, ``any_rows=False``,
            ``roi_align_channels_last=False``, ``roi_align_grad_channels=1``,
            ``roi_pool_channels=1``, ``roi_pool_channel_lanes=False`` and
            ``roi_pool_grad_channel_lanes=False`` (unmeasured on GPUs); the
            other fields, ``roi_align_channels=4`` among them, as :meth:`for_cpu`'s.
        """
        return cls(target="gpu", rows_walks=False, plane_walk=True, plane_lanes=256, plane_lane_chunks=4,
                   outputs_per_invocation=2, lines_workgroup=256, channels_written_out=True, unpool_gather=True,
                   unpool_gather_plane=256, lp_gradient_one_pass=False, flat_lines_under=1, any_rows=False,
                   roi_align_channels_last=False, roi_align_grad_channels=1, roi_pool_channels=1,
                   roi_pool_channel_lanes=False, roi_pool_grad_channel_lanes=False)

    @classmethod
    def preset(cls, target: str) -> "Tuning":
        """``for_cpu()`` or ``for_gpu()`` by name.

        Parameters
        ----------
        target : {"cpu", "gpu"}
            The preset's name.

        Returns
        -------
        Tuning

        Raises
        ------
        ValidationError
            Naming ``target`` where it is neither.
        """
        if target not in ("cpu", "gpu"):
            raise ValidationError("target", f"expected 'cpu' or 'gpu', got {target!r}")
        return cls.for_gpu() if target == "gpu" else cls.for_cpu()
