"""The library's exceptions: one for each kind of failure a caller can act on.

Bad arguments of the wrong *kind* raise the built-in ``TypeError``; the classes
here all derive from ``ValueError`` or ``RuntimeError`` so that callers who do
not know this module can still catch them by the built-in kind.

``warn_at_caller`` reports a warning at the caller's line, outside this package.
"""

import os
import sys
import warnings

#: This package's folder: frames of files under it are ours, not the caller's.
_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


class DescriptorError(ValueError):
    """A descriptor breaks a rule of docs/semantics.md. The message names field, value and rule."""

    def within(self, prefix: str) -> "DescriptorError":
        """The same error, with its field named from an enclosing descriptor."""
        return type(self)(f"{prefix}.{self}")


class DataError(ValueError):
    """Data does not match its descriptor (dtype, shape or buffer size)."""


class ModelError(ValueError):
    """An ONNX model that dmlgpu cannot run (``dmlgpu.onnx_backend``): a node of another op
    type, a type or an attribute it cannot honour. The message names the node and its op type."""


class AdapterError(RuntimeError):
    """No adapter could be found or opened, or the device failed."""


class DeviceLostError(AdapterError):
    """The device can no longer run anything: it was closed, or the GPU lost it (a driver
    reset, ``destroy()``). Open a new ``Device``; other devices are unaffected."""


class GPUMemoryError(MemoryError):
    """The GPU could not hold a buffer. The message says how many bytes were asked for and
    how many dmlgpu already holds on the device; nothing is left half-allocated, and the
    device remains usable."""


class SoftwareAdapterWarning(UserWarning):
    """The default adapter is a software one (lavapipe, WARP, SwiftShader): a CPU runs the
    shaders. Said once a process; choosing the adapter by name, or ``DMLGPU_SOFTWARE_NOTICE=0``,
    silences it."""


def warn_at_caller(message: str, category: type[Warning]) -> None:
    """``warnings.warn``, reported at the first frame outside dmlgpu's package: the caller's
    line that led here (``dmlgpu.argmax(x, 0)``, ``Device()``), however many of our calls are in
    between, rather than a line of ours that moves with every refactoring. The frames are
    counted here on every Python version (3.12's ``skip_file_prefixes`` does the same), so one
    path serves 3.10 to 3.13 and the tests reach it. Where no frame is outside the package (a
    thread of ours), the outermost one is named."""
    level, frame = 2, sys._getframe(1)  # stacklevel 2 is our caller's frame
    while frame.f_back is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        level, frame = level + 1, frame.f_back
    warnings.warn(message, category, stacklevel=level)
