// CLibSecretSystem carries only the compiler and linker flags of libsecret-1 (pkg-config) for
// CLibSecret, the C target Swift imports. It declares nothing itself, so that libsecret's headers
// are part of exactly one Clang module.
