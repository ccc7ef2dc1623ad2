package kernels

// The register-tiled microkernels are generated, not written by hand:
// axpymany_amd64.s, gemm_amd64.s, gemv4_amd64.s, gemv8_amd64.s and quant_amd64.s are the output of the Python
// generators beside them (each begins "Code generated ... DO NOT EDIT.");
// every other .s file is hand-written. `make generate` (go generate
// ./kernels) rewrites them; TestGeneratedAssemblyIsUpToDate fails when a
// committed file differs from what its generator prints. The PTX in
// kernels/cuda is generated too, by nvcc (make cuda-ptx).

//go:generate sh -c "python3 gen_axpymany.py > axpymany_amd64.s"
//go:generate sh -c "python3 gen_gemm.py > gemm_amd64.s"
//go:generate sh -c "python3 gen_gemv4.py > gemv4_amd64.s"
//go:generate sh -c "python3 gen_gemv8.py > gemv8_amd64.s"
//go:generate sh -c "python3 gen_quant.py > quant_amd64.s"
