// The override constants of an average's divisor, for the forward (avg_pool.wgsl) and the
// gradients (common/average_divisor.wgsl) alike, computed by poolgpu.kernels'
// average_divisor_constants.  The divisor is the number of input elements a window covers,
// or with INCLUDE_PADDING its element count.  ONNX's and PyTorch's ceil_mode extend the end
// padding without counting the extension (CLIP_DIVISOR: padding counts only up to the
// counted end padding, per dimension ED, EH, EW).  PyTorch's divisor_override divides every
// window by one number (DIVISOR_OVERRIDE; 0: none).
override INCLUDE_PADDING: bool = false;
override CLIP_DIVISOR: bool = false;
override ED: u32 = 0u;  override EH: u32 = 0u;  override EW: u32 = 0u;
override DIVISOR_OVERRIDE: u32 = 0u;
override WIDE_DIVISOR: bool = false;   // windows of more than 2^32 - 1 elements, padding counted
