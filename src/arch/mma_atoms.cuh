#pragma once
// All mma atoms and their CUDA-core twins (include this from .cu files).
//
//   atom                 instruction                                          native on  twin
//   Sm80_M8N8K4_F64      mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64       sm_80+     Simt_M8N8K4_F64
//   Sm90_M16N8K4_F64     mma.sync.aligned.m16n8k4.row.col.f64.f64.f64.f64      sm_90      Simt_M16N8K4_F64
//   Sm90_M16N8K8_F64     mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64      sm_90      Simt_M16N8K8_F64
//   Sm90_M16N8K16_F64    mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64     sm_90      Simt_M16N8K16_F64
//   Sm80_M16N8K8_TF32    mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32    sm_80+     Simt_M16N8K8_TF32
//   Sm80_M16N8K16_F16    mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32     sm_80+     Simt_M16N8K16_F16
//   Sm80_M16N8K16_BF16   mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32   sm_80+     Simt_M16N8K16_BF16
//   (none)               FP32 inputs on CUDA cores, m16n8k8 layout                        Simt_M16N8K8_F32
#include "arch/mma_simt.cuh"
#include "arch/mma_sm80.cuh"
#include "arch/mma_sm90.cuh"
