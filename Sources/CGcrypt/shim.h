// CGcrypt: libgcrypt for Swift. Helpers for what Swift cannot call (variadic gcry_control) are
// added here with a comment saying why.
#ifndef CGCRYPT_SHIM_H
#define CGCRYPT_SHIM_H
#include <gcrypt.h>
#endif
