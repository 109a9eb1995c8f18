import ctypes
