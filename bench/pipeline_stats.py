"""A driver compiler's statistics of SPIR-V compute shaders, through Vulkan directly (ctypes,
no headers): each shader becomes a compute pipeline created with
``VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR`` on the process's first Vulkan device, and
``VK_KHR_pipeline_executable_properties`` reports what the driver says of it (RADV:
instructions, registers, spills, scratch, LDS, memory instructions, subgroups per SIMD).
Nothing runs: a device without hardware (RADV's null device) serves.  bench/shader_stats.py
runs it in a worker process pointed at that driver."""

from __future__ import annotations

import ctypes as C
from pathlib import Path

U32, U64, PTR, SIZE = C.c_uint32, C.c_uint64, C.c_void_p, C.c_size_t

# (the values of vulkan_core.h)
APPLICATION_INFO, INSTANCE_CREATE_INFO, DEVICE_QUEUE_CREATE_INFO, DEVICE_CREATE_INFO = 0, 1, 2, 3
SHADER_MODULE_CREATE_INFO, PIPELINE_SHADER_STAGE_CREATE_INFO = 16, 18
COMPUTE_PIPELINE_CREATE_INFO, PIPELINE_LAYOUT_CREATE_INFO, DESCRIPTOR_SET_LAYOUT_CREATE_INFO = 29, 30, 32
EXECUTABLE_FEATURES, PIPELINE_INFO, EXECUTABLE_INFO, EXECUTABLE_STATISTIC = 1000269000, 1000269001, 1000269003, 1000269004
FLOAT16_INT8_FEATURES, STORAGE_16BIT_FEATURES = 1000082000, 1000083000
CAPTURE_STATISTICS, COMPUTE_STAGE, COMPUTE_QUEUE = 0x40, 0x20, 0x2
UNIFORM_BUFFER, STORAGE_BUFFER = 6, 7
SPIRV_UNIFORM, SPIRV_STORAGE_BUFFER = 2, 12  # SPIR-V storage classes
OP_DECORATE, OP_VARIABLE, DECORATION_BINDING = 71, 59, 33


def _struct(name, *fields):
    return type(name, (C.Structure,), {"_fields_": list(fields)})


AppInfo = _struct("AppInfo", ("sType", U32), ("pNext", PTR), ("app", C.c_char_p), ("appVersion", U32),
                  ("engine", C.c_char_p), ("engineVersion", U32), ("apiVersion", U32))
InstanceInfo = _struct("InstanceInfo", ("sType", U32), ("pNext", PTR), ("flags", U32), ("app", C.POINTER(AppInfo)),
                       ("layers", U32), ("layerNames", PTR), ("extensions", U32), ("extensionNames", PTR))
QueueInfo = _struct("QueueInfo", ("sType", U32), ("pNext", PTR), ("flags", U32), ("family", U32), ("count", U32),
                    ("priorities", C.POINTER(C.c_float)))
DeviceInfo = _struct("DeviceInfo", ("sType", U32), ("pNext", PTR), ("flags", U32), ("queues", U32),
                     ("queueInfos", C.POINTER(QueueInfo)), ("layers", U32), ("layerNames", PTR), ("extensions", U32),
                     ("extensionNames", C.POINTER(C.c_char_p)), ("features", PTR))
Features = _struct("Features", ("sType", U32), ("pNext", PTR), ("a", U32), ("b", U32), ("c", U32), ("d", U32))
Binding = _struct("Binding", ("binding", U32), ("type", U32), ("count", U32), ("stages", U32), ("samplers", PTR))
SetLayoutInfo = _struct("SetLayoutInfo", ("sType", U32), ("pNext", PTR), ("flags", U32), ("count", U32),
                        ("bindings", C.POINTER(Binding)))
LayoutInfo = _struct("LayoutInfo", ("sType", U32), ("pNext", PTR), ("flags", U32), ("sets", U32),
                     ("setLayouts", C.POINTER(U64)), ("ranges", U32), ("pushRanges", PTR))
ModuleInfo = _struct("ModuleInfo", ("sType", U32), ("pNext", PTR), ("flags", U32), ("size", SIZE), ("code", PTR))
StageInfo = _struct("StageInfo", ("sType", U32), ("pNext", PTR), ("flags", U32), ("stage", U32), ("module", U64),
                    ("name", C.c_char_p), ("specialization", PTR))
PipelineInfo = _struct("PipelineInfo", ("sType", U32), ("pNext", PTR), ("flags", U32), ("stage", StageInfo),
                       ("layout", U64), ("base", U64), ("baseIndex", C.c_int32))
PipelineRef = _struct("PipelineRef", ("sType", U32), ("pNext", PTR), ("pipeline", U64))
ExecutableRef = _struct("ExecutableRef", ("sType", U32), ("pNext", PTR), ("pipeline", U64), ("index", U32))
Statistic = _struct("Statistic", ("sType", U32), ("pNext", PTR), ("name", C.c_char * 256),
                    ("description", C.c_char * 256), ("format", U32), ("value", U64))


def _bindings(code: bytes) -> list:
    """(binding, descriptor type) of the shader's buffers: its variables decorated with a
    Binding, uniform or storage."""
    words = memoryview(code).cast("I")
    binding_of, storage_of, i = {}, {}, 5
    while i < len(words):
        op, length = words[i] & 0xFFFF, words[i] >> 16
        if op == OP_DECORATE and words[i + 2] == DECORATION_BINDING:
            binding_of[words[i + 1]] = words[i + 3]
        elif op == OP_VARIABLE and words[i + 3] in (SPIRV_UNIFORM, SPIRV_STORAGE_BUFFER):
            storage_of[words[i + 2]] = UNIFORM_BUFFER if words[i + 3] == SPIRV_UNIFORM else STORAGE_BUFFER
        i += max(length, 1)
    return sorted((binding_of[v], kind) for v, kind in storage_of.items() if v in binding_of)


class Compiler:
    """The first Vulkan device of this process, ready to compile compute shaders."""

    def __init__(self):
        vk = self.vk = C.CDLL("libvulkan.so.1")
        app = AppInfo(APPLICATION_INFO, None, b"poolgpu shader stats", 1, None, 0, (1 << 22) | (2 << 12))
        instance = PTR()
        self._check(vk.vkCreateInstance(C.byref(InstanceInfo(INSTANCE_CREATE_INFO, None, 0, C.pointer(app))),
                                        None, C.byref(instance)), "vkCreateInstance")
        count = U32(8)
        devices = (PTR * 8)()
        self._check(vk.vkEnumeratePhysicalDevices(instance, C.byref(count), devices), "vkEnumeratePhysicalDevices")
        if not count.value:
            raise RuntimeError("no Vulkan device")
        physical = PTR(devices[0])  # (a handle: ctypes would pass a bare int as 32 bits)
        properties = C.create_string_buffer(4096)  # VkPhysicalDeviceProperties: deviceName at byte 20
        vk.vkGetPhysicalDeviceProperties(physical, properties)
        self.name = properties.raw[20:276].split(b"\0")[0].decode()
        families = (U32 * 6 * 16)()  # VkQueueFamilyProperties: 6 u32, queueFlags first
        count = U32(16)
        vk.vkGetPhysicalDeviceQueueFamilyProperties(physical, C.byref(count), families)
        family = next(i for i in range(count.value) if families[i][0] & COMPUTE_QUEUE)
        priority = C.c_float(1.0)
        queue = QueueInfo(DEVICE_QUEUE_CREATE_INFO, None, 0, family, 1, C.pointer(priority))
        executables = Features(EXECUTABLE_FEATURES, None, 1)
        float16 = Features(FLOAT16_INT8_FEATURES, C.cast(C.pointer(executables), PTR), 1, 1)
        storage16 = Features(STORAGE_16BIT_FEATURES, C.cast(C.pointer(float16), PTR), 1, 1)
        extension = (C.c_char_p * 1)(b"VK_KHR_pipeline_executable_properties")
        info = DeviceInfo(DEVICE_CREATE_INFO, C.cast(C.pointer(storage16), PTR), 0, 1, C.pointer(queue), 0, None, 1,
                          extension, None)
        self.device = PTR()
        self._check(vk.vkCreateDevice(physical, C.byref(info), None, C.byref(self.device)), "vkCreateDevice")
        vk.vkGetDeviceProcAddr.restype = PTR
        function = C.CFUNCTYPE(C.c_int, PTR, PTR, C.POINTER(U32), PTR)
        self._properties = function(vk.vkGetDeviceProcAddr(self.device, b"vkGetPipelineExecutablePropertiesKHR"))
        self._statistics = function(vk.vkGetDeviceProcAddr(self.device, b"vkGetPipelineExecutableStatisticsKHR"))

    @staticmethod
    def _check(result: int, what: str) -> None:
        if result != 0:
            raise RuntimeError(f"{what} returned {result}")

    def statistics(self, path: Path) -> list:
        """Per executable of the shader's compute pipeline (one for a compute shader): the
        driver's statistics by name (numbers)."""
        vk, device = self.vk, self.device
        code = Path(path).read_bytes()
        bindings = _bindings(code)
        entries = (Binding * max(len(bindings), 1))(*(Binding(b, kind, 1, COMPUTE_STAGE, None) for b, kind in bindings))
        set_layout, layout, module, pipeline = U64(), U64(), U64(), U64()
        self._check(vk.vkCreateDescriptorSetLayout(device, C.byref(SetLayoutInfo(
            DESCRIPTOR_SET_LAYOUT_CREATE_INFO, None, 0, len(bindings), entries)), None, C.byref(set_layout)),
            "vkCreateDescriptorSetLayout")
        self._check(vk.vkCreatePipelineLayout(device, C.byref(LayoutInfo(
            PIPELINE_LAYOUT_CREATE_INFO, None, 0, 1, C.pointer(set_layout), 0, None)), None, C.byref(layout)),
            "vkCreatePipelineLayout")
        buffer = C.create_string_buffer(code, len(code))
        self._check(vk.vkCreateShaderModule(device, C.byref(ModuleInfo(
            SHADER_MODULE_CREATE_INFO, None, 0, len(code), C.cast(buffer, PTR))), None, C.byref(module)),
            "vkCreateShaderModule")
        stage = StageInfo(PIPELINE_SHADER_STAGE_CREATE_INFO, None, 0, COMPUTE_STAGE, module.value, b"main", None)
        self._check(vk.vkCreateComputePipelines(device, None, 1, C.byref(PipelineInfo(
            COMPUTE_PIPELINE_CREATE_INFO, None, CAPTURE_STATISTICS, stage, layout.value, 0, -1)), None,
            C.byref(pipeline)), "vkCreateComputePipelines")
        count = U32(0)
        self._properties(device, C.byref(PipelineRef(PIPELINE_INFO, None, pipeline.value)), C.byref(count), None)
        executables = []
        for index in range(count.value):
            executable = ExecutableRef(EXECUTABLE_INFO, None, pipeline.value, index)
            n = U32(0)
            self._statistics(device, C.byref(executable), C.byref(n), None)
            stats = (Statistic * n.value)(*(Statistic(EXECUTABLE_STATISTIC) for _ in range(n.value)))
            self._statistics(device, C.byref(executable), C.byref(n), stats)
            executables.append({s.name.decode(): _value(s) for s in stats})
        for destroy, handle in (("vkDestroyPipeline", pipeline), ("vkDestroyShaderModule", module),
                                ("vkDestroyPipelineLayout", layout), ("vkDestroyDescriptorSetLayout", set_layout)):
            getattr(vk, destroy)(device, handle, None)
        return executables


def _value(statistic):
    """A statistic's value by its format: 0 bool, 1 int64, 2 uint64, 3 float64."""
    raw = U64(statistic.value)
    if statistic.format == 1:
        return C.c_int64.from_buffer(raw).value
    if statistic.format == 3:
        return C.c_double.from_buffer(raw).value
    return bool(raw.value) if statistic.format == 0 else raw.value
