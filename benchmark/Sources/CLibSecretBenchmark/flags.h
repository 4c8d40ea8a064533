// Only the compiler and linker flags of libsecret-1 (pkg-config) for CBenchmarkLibsecret.
