"""Unmanaged array views for the event loop.

Numba takes a reference on every array argument when a function starts and drops it when the
function returns (an atomic increment and decrement of the array's memory-info).  The event loop
calls a dozen handlers per event, each with ~20 tables, and those atomic operations were measured
at 60-70% of the run time.  ``borrow(a)`` returns a view of ``a`` with no memory-info, so the
reference counting of the view becomes a null check.  The view is valid only while ``a`` itself
is alive, which is the whole of ``core.run``, where the views are made and used.
"""

from numba import types
from numba.core import cgutils
from numba.extending import intrinsic


@intrinsic
def borrow(typingctx, arr):
    if not isinstance(arr, types.Array):
        return None

    def codegen(context, builder, sig, args):
        aryty = sig.args[0]
        src = context.make_array(aryty)(context, builder, value=args[0])
        dst = context.make_array(aryty)(context, builder)
        dst.data = src.data
        dst.shape = src.shape
        dst.strides = src.strides
        dst.nitems = src.nitems
        dst.itemsize = src.itemsize
        dst.meminfo = cgutils.get_null_value(dst.meminfo.type)
        dst.parent = cgutils.get_null_value(dst.parent.type)
        return dst._getvalue()

    return arr(arr), codegen
