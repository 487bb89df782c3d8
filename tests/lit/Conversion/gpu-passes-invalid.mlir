// The passes of attnc-map-to-gpu after attnc-gpu-outline, on kernels
// written by hand: attnc-gpu-private-buffers refuses a private buffer that
// one thread indexes with another thread's row (on the host every row is
// one buffer; on the GPU each thread has only its own), and
// attnc-gpu-map-threads a kernel whose block size nobody set.
// RUN: not attnc-opt %s --split-input-file --attnc-gpu-private-buffers 2>&1 | FileCheck %s --check-prefix=PRIVATE
// RUN: not attnc-opt %s --split-input-file --attnc-gpu-map-threads 2>&1 | FileCheck %s --check-prefix=THREADS
// PRIVATE: error: 'memref.store' op attnc-gpu-private-buffers: a private buffer must be indexed by the thread id first
// THREADS: error: 'gpu.func' op attnc-gpu-map-threads: a kernel without known_block_size (attnc-gpu-outline sets it)
module attributes {gpu.container_module} {
  gpu.module @g {
    gpu.func @other_row(%a: memref<?xf32>) private(%pv : memref<4x2xf32, #gpu.address_space<private>>) kernel attributes {known_block_size = array<i32: 4, 1, 1>} {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %tid = gpu.thread_id x
      %x = memref.load %a[%tid] : memref<?xf32>
      memref.store %x, %pv[%c1, %c0] : memref<4x2xf32, #gpu.address_space<private>>
      gpu.return
    }
  }
}

// -----

module attributes {gpu.container_module} {
  gpu.module @g {
    gpu.func @no_block_size(%a: memref<?xf32>) kernel {
      scf.forall (%t) in (4) {
        %x = memref.load %a[%t] : memref<?xf32>
      } {mapping = [#gpu.thread<x>]}
      gpu.return
    }
  }
}
