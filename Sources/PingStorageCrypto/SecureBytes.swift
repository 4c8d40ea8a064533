#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
package import Gcrypt

/// Secret bytes in the package's secret memory (locked when the system allows, left out of core
/// dumps, wiped on release): the name this module and PingStorage have always used for the Gcrypt
/// module's `SecretBytes`, the one secret-memory container of the package.
package typealias SecureBytes = SecretBytes

/// Overwrites `buffer` with zeros in a way the optimiser cannot remove (`explicit_bzero`), even
/// when the memory is about to be freed. Package-level so tests can check it.
package func zeroize(_ buffer: UnsafeMutableRawBufferPointer) {
    guard let base = buffer.baseAddress, buffer.count > 0 else { return }
    explicit_bzero(base, buffer.count)
}
