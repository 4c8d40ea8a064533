// AES-128-CBC with PKCS#7 padding, the one implementation in the package: the Secret Service's
// encrypted sessions and libsecret's file keyring both encrypt this way. See CGcrypt.h.
#include "CGcrypt.h"

#include <string.h>

enum { block_bytes = 16 };

/// A fresh AES-128-CBC handle keyed with `key` and `iv`, or NULL.
static gcry_cipher_hd_t cipher(const unsigned char key[CGCRYPT_AES_KEY_BYTES], const unsigned char *iv) {
    gcry_cipher_hd_t handle = NULL;
    if (gcry_cipher_open(&handle, GCRY_CIPHER_AES128, GCRY_CIPHER_MODE_CBC, GCRY_CIPHER_SECURE) != 0) return NULL;
    if (gcry_cipher_setkey(handle, key, CGCRYPT_AES_KEY_BYTES) != 0
        || gcry_cipher_setiv(handle, iv, CGCRYPT_CBC_IV_BYTES) != 0) {
        gcry_cipher_close(handle);
        return NULL;
    }
    return handle;
}

size_t cgcrypt_cbc_padded_length(size_t plaintext_length) {
    return plaintext_length + block_bytes - plaintext_length % block_bytes;
}

int cgcrypt_cbc_encrypt(const unsigned char key[CGCRYPT_AES_KEY_BYTES], const unsigned char *plaintext, size_t length,
                        unsigned char iv[CGCRYPT_CBC_IV_BYTES], unsigned char *out) {
    size_t padded = cgcrypt_cbc_padded_length(length);
    unsigned char pad = (unsigned char)(padded - length);
    if (length > 0) memcpy(out, plaintext, length);
    memset(out + length, pad, pad);
    gcry_create_nonce(iv, CGCRYPT_CBC_IV_BYTES);
    gcry_cipher_hd_t handle = cipher(key, iv);
    int ok = handle != NULL && gcry_cipher_encrypt(handle, out, padded, NULL, 0) == 0;
    gcry_cipher_close(handle);
    // On failure `out` may still hold the plaintext: wipe it, so a caller that drops it leaks nothing.
    if (!ok) explicit_bzero(out, padded);
    return ok;
}

long cgcrypt_cbc_decrypt(const unsigned char key[CGCRYPT_AES_KEY_BYTES], const unsigned char *iv, size_t iv_length,
                         const unsigned char *ciphertext, size_t length, unsigned char *out) {
    if (iv_length != CGCRYPT_CBC_IV_BYTES || length == 0 || length % block_bytes != 0) return CGCRYPT_CBC_MALFORMED;
    gcry_cipher_hd_t handle = cipher(key, iv);
    if (handle == NULL) return CGCRYPT_CBC_FAILED;
    int ok = gcry_cipher_decrypt(handle, out, length, ciphertext, length) == 0;
    gcry_cipher_close(handle);
    if (!ok) {
        explicit_bzero(out, length);
        return CGCRYPT_CBC_FAILED;
    }
    // PKCS#7: the last byte n (1...16) and the n bytes before it all equal n. Checked without
    // branching on the bytes, though in both uses whoever could learn from the timing holds the
    // key already (the provider; the keyring file's HMAC is checked first).
    unsigned char pad = out[length - 1];
    unsigned char bad = (unsigned char)((pad == 0) | (pad > block_bytes));
    for (size_t index = 1; index <= block_bytes; index++) {
        unsigned char inside = (unsigned char)(index <= pad);
        bad |= (unsigned char)(inside & (out[length - index] != pad));
    }
    if (bad) {
        explicit_bzero(out, length);
        return CGCRYPT_CBC_BAD_PADDING;
    }
    return (long)(length - pad);
}
