//! Generators of realistic inputs for the benchmarks under `benches/`.
