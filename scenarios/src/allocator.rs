//! The allocator the `coordsim` binary and the benches run with: mimalloc, as the `mimalloc`
//! crate's `MiMalloc` gives it, but through plain `mi_malloc` for the
//! alignments `mi_malloc` guarantees anyway.
//!
//! A simulated run allocates and frees messages, effects, timers and history records by
//! the hundred thousand (about 256,000 allocations in a queue-lock seed). The `mimalloc`
//! crate (0.1.52) asks `mi_malloc_aligned` for every one of them, whose checks and calls
//! cost about 36 more instructions per allocation than `mi_malloc` (measured with callgrind
//! on 255,829 allocations and frees of 16-160 bytes). Rust's own `System` allocator makes
//! the same choice on unix: plain `malloc` when the alignment is at most 16 bytes (what
//! `mi_malloc` returns on 64-bit targets, `MI_MAX_ALIGN_SIZE`) and at most the size (a
//! block of `size` bytes is aligned to its size class, so to any power of two up to it).

use libmimalloc_sys::{
    mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned, mi_zalloc,
    mi_zalloc_aligned,
};
use std::{
    alloc::{GlobalAlloc, Layout},
    ffi::c_void,
};

/// The largest alignment every `mi_malloc` block of at least that size has.
const MALLOC_ALIGN_BYTES: usize = 16;

/// mimalloc, asked for alignment only when the alignment needs it (see the module doc).
pub struct MiMalloc;

/// Whether a block of `size_bytes` from plain `mi_malloc` is aligned to `align_bytes`.
fn malloc_aligns(align_bytes: usize, size_bytes: usize) -> bool {
    align_bytes <= MALLOC_ALIGN_BYTES && align_bytes <= size_bytes
}

// SAFETY: every block comes from mimalloc and goes back to it (`mi_free` takes blocks of
// `mi_malloc` and `mi_malloc_aligned` alike); a plain block is asked for only where
// `mi_malloc` guarantees the layout's alignment.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        unsafe {
            if malloc_aligns(layout.align(), layout.size()) {
                mi_malloc(layout.size()).cast()
            } else {
                mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        unsafe {
            if malloc_aligns(layout.align(), layout.size()) {
                mi_zalloc(layout.size()).cast()
            } else {
                mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, pointer: *mut u8, _layout: Layout) {
        unsafe { mi_free(pointer.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        unsafe {
            if malloc_aligns(layout.align(), new_size) {
                mi_realloc(pointer.cast::<c_void>(), new_size).cast()
            } else {
                mi_realloc_aligned(pointer.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{MiMalloc, malloc_aligns};
    use std::alloc::{GlobalAlloc, Layout};

    #[test]
    fn plain_malloc_only_for_alignments_it_guarantees() {
        assert!(malloc_aligns(8, 8));
        assert!(malloc_aligns(16, 40));
        assert!(!malloc_aligns(32, 64));
        assert!(!malloc_aligns(16, 8));
    }

    #[test]
    fn every_block_has_its_layouts_alignment_and_keeps_its_bytes() {
        for (size, align) in [
            (1, 1),
            (8, 8),
            (24, 8),
            (40, 16),
            (8, 16),
            (64, 64),
            (100, 4096),
        ] {
            let layout = Layout::from_size_align(size, align).unwrap();
            unsafe {
                let block = MiMalloc.alloc(layout);
                assert_eq!(block as usize % align, 0, "{size} bytes aligned to {align}");
                block.write_bytes(7, size);
                let zeroed = MiMalloc.alloc_zeroed(layout);
                assert_eq!(zeroed as usize % align, 0);
                assert!((0..size).all(|i| *zeroed.add(i) == 0));
                let grown = MiMalloc.realloc(block, layout, size * 3);
                assert_eq!(
                    grown as usize % align,
                    0,
                    "{size} bytes grown, aligned to {align}"
                );
                assert!((0..size).all(|i| *grown.add(i) == 7));
                MiMalloc.dealloc(grown, Layout::from_size_align(size * 3, align).unwrap());
                MiMalloc.dealloc(zeroed, layout);
            }
        }
    }
}
