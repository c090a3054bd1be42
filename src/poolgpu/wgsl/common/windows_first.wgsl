// The block gathers' windows-first visit (common/windows_covering.wgsl's blocks), where
// WINDOWS_FIRST (poolgpu.kernels: strides of at most 2 and at most 2 windows reaching a block
// along every dimension, e.g. 3x3 stride 2).  The gathers' tap loops read a window once
// per tap that lands on the block (3x3 stride 2: 9 reads of 4 windows); here
// the block visits each window reaching it once, reads it once, and adds it to each block
// element its taps land on, with the windows and elements written out so that which taps
// land where is a constant (lavapipe, case A channels-last: max gradient 1.24-1.27x,
// average gradient 1.6-1.8x faster).
// Each element still adds its windows in the order of the loops (window o descending: tap
// ascending), so the bits are the same.  NW{D,H,W}: the windows reaching a block along each
// dimension, o = b + pad / stride - m for m < NW.  The kernel declares:
//   struct Reaching     what it needs to read a window (its tensors' planes);
//   struct WindowOf     a window read;
//   fn read_window(at: Reaching, od: u32, oh: u32, ow: u32, real: bool) -> WindowOf
//                       (`real`: the window exists; the coordinates are clamped into the tensor);
//   fn add_tap(sums: ptr<function, array<Sum, 8>>, r: u32, window: WindowOf, me: u32)
//                       (the window added to block element r, whose flat logical index is me).
override WINDOWS_FIRST: bool = false;
override NWD: u32 = 1u;  override NWH: u32 = 1u;  override NWW: u32 = 1u;

// The block's coordinates and its element 0's flat logical index (wrapping where that
// element lies before the tensor: such elements are never stored).
struct BlockFirst { d: u32, h: u32, w: u32, me: u32 }

fn visit_windows(sums: ptr<function, array<Sum, 8>>, block: BlockFirst, at: Reaching) {
    visit_window(sums, block, at, 0u, 0u, 0u);
    visit_window(sums, block, at, 0u, 0u, 1u);
    visit_window(sums, block, at, 0u, 1u, 0u);
    visit_window(sums, block, at, 0u, 1u, 1u);
    visit_window(sums, block, at, 1u, 0u, 0u);
    visit_window(sums, block, at, 1u, 0u, 1u);
    visit_window(sums, block, at, 1u, 1u, 0u);
    visit_window(sums, block, at, 1u, 1u, 1u);
}

fn visit_window(sums: ptr<function, array<Sum, 8>>, block: BlockFirst, at: Reaching, md: u32, mh: u32, mw: u32) {
    if (md >= NWD || mh >= NWH || mw >= NWW) { return; }
    let od = reaching_window(block.d, md, SD, PD, params.out_d);
    let oh = reaching_window(block.h, mh, SH, PH, params.out_h);
    let ow = reaching_window(block.w, mw, SW, PW, params.out_w);
    let window = read_window(at, od.o, oh.o, ow.o, od.hit && oh.hit && ow.hit);
    let m = vec3<u32>(md, mh, mw);
    element_tap(sums, block.me, window, m, vec3<u32>(0u, 0u, 0u));
    element_tap(sums, block.me, window, m, vec3<u32>(0u, 0u, 1u));
    element_tap(sums, block.me, window, m, vec3<u32>(0u, 1u, 0u));
    element_tap(sums, block.me, window, m, vec3<u32>(0u, 1u, 1u));
    element_tap(sums, block.me, window, m, vec3<u32>(1u, 0u, 0u));
    element_tap(sums, block.me, window, m, vec3<u32>(1u, 0u, 1u));
    element_tap(sums, block.me, window, m, vec3<u32>(1u, 1u, 0u));
    element_tap(sums, block.me, window, m, vec3<u32>(1u, 1u, 1u));
}

// Window m's tap landing on block element r, if one does.
fn element_tap(sums: ptr<function, array<Sum, 8>>, me: u32, window: WindowOf, m: vec3<u32>, r: vec3<u32>) {
    if (r.x >= SD || r.y >= SH || r.z >= SW) { return; }
    if (!(lands(r.x, m.x, SD, LD, KD) && lands(r.y, m.y, SH, LH, KH) && lands(r.z, m.z, SW, LW, KW))) { return; }
    add_tap(sums, element_slot(r), window, me + (r.x * params.in_h + r.y) * params.in_w + r.z);
}

fn element_slot(r: vec3<u32>) -> u32 { return (r.x * 2u + r.y) * 2u + r.z; }

// Window m of those reaching block b along one dimension, clamped into [0, count) where it
// does not exist (`hit` false).
fn reaching_window(b: u32, m: u32, stride: u32, pad: u32, count: u32) -> Window {
    let o = i32(b + pad / stride) - i32(m);
    return Window(u32(clamp(o, 0, i32(count) - 1)), o >= 0 && o < i32(count));
}

// Whether a tap of window m (from the block's) lands on block element r: r + stride * m
// = k * dilation for some tap k < size.
fn lands(r: u32, m: u32, stride: u32, dilation: u32, size: u32) -> bool {
    return is_tap(i32(r + stride * m), dilation, size);
}

// The block's sums stored at its elements inside dx.
fn store_block(sums: ptr<function, array<Sum, 8>>, block: BlockFirst, dx_plane: u32) {
    store_element(sums, block, dx_plane, vec3<u32>(0u, 0u, 0u));
    store_element(sums, block, dx_plane, vec3<u32>(0u, 0u, 1u));
    store_element(sums, block, dx_plane, vec3<u32>(0u, 1u, 0u));
    store_element(sums, block, dx_plane, vec3<u32>(0u, 1u, 1u));
    store_element(sums, block, dx_plane, vec3<u32>(1u, 0u, 0u));
    store_element(sums, block, dx_plane, vec3<u32>(1u, 0u, 1u));
    store_element(sums, block, dx_plane, vec3<u32>(1u, 1u, 0u));
    store_element(sums, block, dx_plane, vec3<u32>(1u, 1u, 1u));
}

fn store_element(sums: ptr<function, array<Sum, 8>>, block: BlockFirst, dx_plane: u32, r: vec3<u32>) {
    if (r.x >= SD || r.y >= SH || r.z >= SW) { return; }
    let d = block_element(block.d, r.x, SD, PD, params.in_d);
    let h = block_element(block.h, r.y, SH, PH, params.in_h);
    let w = block_element(block.w, r.z, SW, PW, params.in_w);
    if (d.inside && h.inside && w.inside) {
        dx_put(dx_plane + d.at * params.dx_d + h.at * params.dx_h + w.at * params.dx_w, (*sums)[element_slot(r)]);
    }
}

// Block b's element 0's flat logical index in plane nc (see BlockFirst).
fn first_element_index(nc: u32, b: vec3<u32>) -> u32 {
    let d = block_element(b.x, 0u, SD, PD, params.in_d).at;
    let h = block_element(b.y, 0u, SH, PH, params.in_h).at;
    let w = block_element(b.z, 0u, SW, PW, params.in_w).at;
    return ((nc * params.in_d + d) * params.in_h + h) * params.in_w + w;
}
