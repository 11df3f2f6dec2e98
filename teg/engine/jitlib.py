"""The engine's jit decorators and the small jitted utilities its loop is built from: LLVM hints
(prefetch, non-negative index), two-number min/max, a min-heap of slot free times and a min-tree
over the SMs' wake-up times.

The loop is one jitted entry (:func:`teg.engine.core.simulate`) that calls module-level helpers,
each compiled once on its own (numba's front end inlines a *closure*'s code at every call site
before typing it, and its cost grows faster than a function's length). Their decorators:

* :data:`helper` — set-up (run once per run) and small leaf functions;
* :data:`hot` — the loop's phases and the helpers of the issue path, inlined by LLVM
  (``forceinline``: the machine code is as if they were written out in the loop);
* :data:`cold` — rare events (block launch, barrier release, an instruction-cache miss, a TLB
  fill), called.

``hot`` and ``cold`` functions take the loop's tables in named tuples and do no reference counting
(``_nrt=False``): every array belongs to the run's state, held by the entry for the whole call, and
the increments and decrements numba emits for each array of a tuple at each call would stay in the
loop otherwise. None of them is cached on its own: they are compiled into the entries, whose cache
(:func:`teg.jit.stamp_sources`) goes stale when any of the engine's source files changes.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

from teg.jit import inner

helper = inner(cache=False)
hot = inner(cache=False, forceinline=True, _nrt=False)
cold = inner(cache=False, _nrt=False)

INF = 1e300


@intrinsic
def prefetch(typingctx, arr, idx):
    """Hint the CPU to fetch ``arr[idx]`` into cache (``llvm.prefetch``; no effect on results, never
    faults)."""
    sig = types.void(arr, idx)

    def codegen(context, builder, signature, args):
        aryty = signature.args[0]
        ary = context.make_array(aryty)(context, builder, args[0])
        ptr = cgutils.get_item_pointer(context, builder, aryty, ary, [args[1]], wraparound=False)
        i8p = ir.IntType(8).as_pointer()
        i32 = ir.IntType(32)
        fnty = ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
        builder.call(fn, [builder.bitcast(ptr, i8p), i32(0), i32(3), i32(1)])   # read, keep, data
        return context.get_dummy_value()

    return sig, codegen


@intrinsic
def nonneg(typingctx, x):
    """``x`` itself, with the promise that it is >= 0 (``llvm.assume``). Indexing an array with a
    signed integer costs a compare and add per index (Python's negative-index wraparound) unless
    LLVM can prove the index non-negative; the engine's indexes never are negative, and saying so
    where they are loaded from the tables lets LLVM drop that code from the loop."""
    sig = x(x)

    def codegen(context, builder, signature, args):
        v = args[0]
        fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(1)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.assume")
        builder.call(fn, [builder.icmp_signed(">=", v, ir.Constant(v.type, 0))])
        return v

    return sig, codegen


@intrinsic
def fixed_dim(typingctx, arr, dim, n):
    """Promise that dimension ``dim`` (a literal) of ``arr`` is ``n`` (``llvm.assume``). numba
    indexes a C-ordered ``a[i, j]`` as ``i * a.shape[1] + j``, the shape a run-time value (a
    multiplication, and one more value held in a register or reloaded from the stack at every
    access); told that the width is a constant, LLVM turns the multiplication into a shift and
    drops the value. Said once at the top of the loop for the state tables whose widths are
    constants (the ``NUM_*`` columns)."""
    if not isinstance(dim, types.IntegerLiteral):
        return None
    d = dim.literal_value
    sig = types.void(arr, dim, n)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        shape = cgutils.unpack_tuple(builder, ary.shape)
        v = context.cast(builder, args[2], signature.args[2], types.intp)
        fnty = ir.FunctionType(ir.VoidType(), [ir.IntType(1)])
        fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.assume")
        builder.call(fn, [builder.icmp_signed("==", shape[d], v)])
        return context.get_dummy_value()

    return sig, codegen


@helper
def max2(a, b):
    """``max(a, b)`` for two numbers (the builtin is an out-of-line call in the big loop; this one
    LLVM inlines)."""
    return a if a >= b else b


@helper
def min2(a, b):
    """``min(a, b)`` for two numbers (inlined by LLVM, as :func:`max2`)."""
    return a if a <= b else b


@helper
def heap_replace_top(heap, p, n, value):
    """Replace the minimum of min-heap ``heap[p, :n]`` by ``value`` and restore the heap."""
    i = 0
    while True:
        left = 2 * i + 1
        if left >= n:
            break
        c = left
        if left + 1 < n and heap[p, left + 1] < heap[p, left]:
            c = left + 1
        if heap[p, c] < value:
            heap[p, i] = heap[p, c]
            i = c
        else:
            break
    heap[p, i] = value


def pow2_at_least(n):
    """The smallest power of two >= ``n`` (at least 1): the min-tree's leaves (plain Python, for
    the state's construction)."""
    p = 1
    while p < n:
        p *= 2
    return p


@helper
def tree_set(tree, leaves, i, v):
    """Set leaf ``i`` of the min-tree ``tree`` (``leaves`` leaves, a power of two; node ``j`` holds
    the minimum of nodes ``2j`` and ``2j+1``, the root is node 1) to ``v`` and update its
    ancestors, stopping where a minimum does not change."""
    j = nonneg(leaves + i)
    tree[j] = v
    j >>= 1
    while j >= 1:
        a = tree[nonneg(2 * j)]
        b = tree[nonneg(2 * j + 1)]
        m = a if a <= b else b
        if tree[j] == m:
            break
        tree[j] = m
        j >>= 1


@helper
def tree_first_le(tree, leaves, start, t):
    """The smallest leaf index ``>= start`` whose value is ``<= t``, or -1 (O(log leaves)): from
    leaf ``start`` climb while the node is a right child, step to the right sibling, and descend
    into the leftmost qualifying subtree once a node's minimum qualifies."""
    if start >= leaves:
        return -1
    i = nonneg(leaves + start)
    while True:
        if tree[i] <= t:
            while i < leaves:
                i = nonneg(2 * i)
                if tree[i] > t:
                    i += 1
            return i - leaves
        while i & 1:
            i >>= 1
        if i == 0:
            return -1
        i += 1
