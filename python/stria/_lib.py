"""ctypes bindings of libstria.so, the C API in client/include/stria/stria.h.

Every call into the library releases the GIL (ctypes does so for CDLL functions), so many
Python threads can each wait on their own reads and writes at once. Buffers are passed by
address, never copied: a bytearray, a memoryview, a numpy array or a tensor's storage.

The library is found, in order, at $STRIA_LIBRARY, by the dynamic loader (libstria.so.1,
installed by `cmake --install` or scripts/stria-local), and in the build tree beside this
package (build/lib of the source checkout), so tests run from a checkout without installing.
"""

import ctypes
import ctypes.util
import errno
import os

c_uint64 = ctypes.c_uint64
c_int64 = ctypes.c_int64
c_uint32 = ctypes.c_uint32
c_int32 = ctypes.c_int32
c_int = ctypes.c_int
c_char_p = ctypes.c_char_p
c_void_p = ctypes.c_void_p
c_size_t = ctypes.c_size_t
c_ssize_t = ctypes.c_ssize_t

MAX_COMPONENTS = 16
PATTERN_RAID0 = 1
PATTERN_MDT = 2
COMP_INIT = 0x10
OP_READ, OP_WRITE, OP_FSYNC = 0, 1, 2


class ConnectOpts(ctypes.Structure):
    _fields_ = [("struct_size", c_uint32), ("timeout_ms", c_int), ("io_threads", c_int),
                ("dentry_ttl_ms", c_int), ("key_file", ctypes.c_char_p)]


class Stat(ctypes.Structure):
    _fields_ = [("ino", c_uint64), ("mode", c_uint32), ("nlink", c_uint32), ("uid", c_uint32),
                ("gid", c_uint32), ("size", c_uint64), ("blocks", c_uint64),
                ("atime_ns", c_int64), ("mtime_ns", c_int64), ("ctime_ns", c_int64)]


class Dirent(ctypes.Structure):
    _fields_ = [("ino", c_uint64), ("type", c_uint32), ("name", ctypes.c_char * 256)]


class Layout(ctypes.Structure):
    _fields_ = [("stripe_count", c_int32), ("stripe_size", c_uint64), ("stripe_offset", c_int32),
                ("pool", c_char_p), ("spec", c_char_p)]


class Component(ctypes.Structure):
    _fields_ = [("id", c_uint32), ("flags", c_uint32), ("start", c_uint64), ("end", c_uint64),
                ("pattern", c_uint32), ("stripe_count", c_int32), ("stripe_size", c_uint64),
                ("stripe_offset", c_int32), ("object_count", c_uint32),
                ("pool", ctypes.c_char * 64)]


class LayoutInfo(ctypes.Structure):
    _fields_ = [("generation", c_uint32), ("composite", c_uint32),
                ("component_count", c_uint32), ("comp", Component * MAX_COMPONENTS)]


class Io(ctypes.Structure):
    _fields_ = [("op", c_uint32), ("file", c_void_p), ("offset", c_uint64), ("buf", c_void_p),
                ("length", c_size_t), ("user_data", c_uint64)]


class Completion(ctypes.Structure):
    _fields_ = [("user_data", c_uint64), ("result", c_int64)]


def _candidates():
    env = os.environ.get("STRIA_LIBRARY")
    if env:
        yield env
    yield "libstria.so.1"
    found = ctypes.util.find_library("stria")
    if found:
        yield found
    here = os.path.dirname(os.path.abspath(__file__))
    for build in ("build", os.environ.get("STRIA_BUILD_DIR", "")):
        if build:
            yield os.path.join(here, "..", "..", build, "lib", "libstria.so.1")


def _load():
    errors = []
    for path in _candidates():
        try:
            return ctypes.CDLL(path)
        except OSError as e:
            errors.append(f"{path}: {e}")
    raise ImportError("cannot load libstria.so (build Stria with scripts/build.sh, install it "
                      "with scripts/stria-local install, or set STRIA_LIBRARY): " +
                      "; ".join(errors))


lib = _load()

_sigs = {
    "stria_api_version": (c_int, []),
    "stria_errmsg": (c_char_p, []),
    "stria_connect": (c_int, [c_char_p, ctypes.POINTER(ConnectOpts), ctypes.POINTER(c_void_p)]),
    "stria_disconnect": (None, [c_void_p]),
    "stria_stat": (c_int, [c_void_p, c_char_p, ctypes.POINTER(Stat)]),
    "stria_lstat": (c_int, [c_void_p, c_char_p, ctypes.POINTER(Stat)]),
    "stria_mkdir": (c_int, [c_void_p, c_char_p, c_uint32]),
    "stria_rmdir": (c_int, [c_void_p, c_char_p]),
    "stria_unlink": (c_int, [c_void_p, c_char_p]),
    "stria_rename": (c_int, [c_void_p, c_char_p, c_char_p, ctypes.c_uint]),
    "stria_symlink": (c_int, [c_void_p, c_char_p, c_char_p]),
    "stria_truncate": (c_int, [c_void_p, c_char_p, c_uint64]),
    "stria_fsync_dir": (c_int, [c_void_p, c_char_p]),
    "stria_opendir": (c_int, [c_void_p, c_char_p, ctypes.POINTER(c_void_p)]),
    "stria_readdir": (c_int, [c_void_p, ctypes.POINTER(Dirent)]),
    "stria_closedir": (None, [c_void_p]),
    "stria_getstripe": (c_int, [c_void_p, c_char_p, ctypes.POINTER(LayoutInfo)]),
    "stria_setstripe": (c_int, [c_void_p, c_char_p, ctypes.POINTER(Layout)]),
    "stria_open": (c_int, [c_void_p, c_char_p, c_int, c_uint32, ctypes.POINTER(Layout),
                           ctypes.POINTER(c_void_p)]),
    "stria_pread": (c_ssize_t, [c_void_p, c_void_p, c_size_t, c_uint64]),
    "stria_pwrite": (c_ssize_t, [c_void_p, c_void_p, c_size_t, c_uint64]),
    "stria_fsync": (c_int, [c_void_p]),
    "stria_ftruncate": (c_int, [c_void_p, c_uint64]),
    "stria_fstat": (c_int, [c_void_p, ctypes.POINTER(Stat)]),
    "stria_file_size": (c_uint64, [c_void_p]),
    "stria_close": (c_int, [c_void_p]),
    "stria_queue_create": (c_int, [c_void_p, ctypes.c_uint, ctypes.POINTER(c_void_p)]),
    "stria_queue_submit": (c_int, [c_void_p, ctypes.POINTER(Io), ctypes.c_uint]),
    "stria_queue_complete": (c_int, [c_void_p, ctypes.POINTER(Completion), ctypes.c_uint,
                                     ctypes.c_uint, c_int]),
    "stria_queue_destroy": (None, [c_void_p]),
}
for _name, (_res, _args) in _sigs.items():
    _fn = getattr(lib, _name)
    _fn.restype = _res
    _fn.argtypes = _args


def error(rc, path=None):
    """The OSError (FileNotFoundError, PermissionError, ...) for a negative errno."""
    code = -rc if rc < 0 else errno.EIO
    detail = (lib.stria_errmsg() or b"").decode("utf-8", "replace")
    msg = os.strerror(code) + (f" ({detail})" if detail else "")
    if path is not None:
        return OSError(code, msg, path)
    return OSError(code, msg)


def check(rc, path=None):
    """rc if it is not a negative errno; raises the matching OSError otherwise."""
    if rc < 0:
        raise error(rc, path)
    return rc


def encode(path):
    if isinstance(path, bytes):
        p = path
    else:
        p = os.fspath(path).encode("utf-8", "surrogateescape")
    if b"\0" in p:
        raise ValueError("embedded null byte in path")
    return p


class _PyBuffer(ctypes.Structure):
    """CPython's Py_buffer: how a read-only buffer's address is had without a copy."""
    _fields_ = [("buf", c_void_p), ("obj", ctypes.py_object), ("len", c_ssize_t),
                ("itemsize", c_ssize_t), ("readonly", c_int), ("ndim", c_int),
                ("format", c_char_p), ("shape", c_void_p), ("strides", c_void_p),
                ("suboffsets", c_void_p), ("internal", c_void_p)]


_get_buffer = ctypes.pythonapi.PyObject_GetBuffer
_get_buffer.argtypes = [ctypes.py_object, ctypes.POINTER(_PyBuffer), c_int]
_get_buffer.restype = c_int
_release_buffer = ctypes.pythonapi.PyBuffer_Release
_release_buffer.argtypes = [ctypes.POINTER(_PyBuffer)]
_release_buffer.restype = None


class _Exported:
    """A buffer exported by its object (pinned) until this is released or collected."""

    def __init__(self, obj):
        self.view = _PyBuffer()
        _get_buffer(obj, ctypes.byref(self.view), 0)  # PyBUF_SIMPLE: contiguous bytes

    def __del__(self):
        if self.view.obj is not None:
            _release_buffer(ctypes.byref(self.view))


def buffer_address(buf, writable):
    """(address, nbytes, keepalive) of a contiguous buffer, without copying it. The buffer
    stays pinned while `keepalive` is referenced."""
    mv = memoryview(buf)
    if not mv.contiguous:
        raise BufferError("the buffer must be contiguous")
    if writable and mv.readonly:
        raise TypeError("the buffer is read-only")
    mv = mv.cast("B") if mv.format != "B" or mv.ndim != 1 else mv
    n = mv.nbytes
    if n == 0:
        return None, 0, mv
    if mv.readonly:
        # ctypes' from_buffer wants a writable buffer; bytes and read-only views are only
        # read, so their address comes straight from the buffer protocol.
        exported = _Exported(mv)
        return exported.view.buf, n, (exported, mv)
    arr = (ctypes.c_char * n).from_buffer(mv)
    return ctypes.addressof(arr), n, (arr, mv)
