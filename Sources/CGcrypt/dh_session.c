// The key exchange of the Secret Service's dh-ietf1024-sha256-aes128-cbc-pkcs7 sessions
// (Diffie-Hellman, then HKDF-SHA256 to an AES key); see CGcrypt.h for the contract of each function
// and why the choices below are safe. The secrets themselves are encrypted in aes_cbc.c.
#include "CGcrypt.h"

#include <string.h>

// RFC 2409 §6.2, the second Oakley group: a 1024-bit safe prime p = 2q + 1, generator 2. The
// Secret Service specification fixes this group for the algorithm name.
static const char oakley_group_2_prime[] =
    "FFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DD"
    "EF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7ED"
    "EE386BFB5A899FA5AE9F24117C4B1FE649286651ECE65381FFFFFFFFFFFFFFFF";

enum { sha256_bytes = 32 };

struct cgcrypt_dh_pair {
    gcry_mpi_t private_exponent;  // secure memory
    unsigned char public_key[CGCRYPT_DH_KEY_BYTES];
};

static gcry_mpi_t prime(void) {
    gcry_mpi_t p = NULL;
    if (gcry_mpi_scan(&p, GCRYMPI_FMT_HEX, oakley_group_2_prime, 0, NULL) != 0) return NULL;
    return p;
}

/// Writes `value` (< p) big-endian into exactly CGCRYPT_DH_KEY_BYTES bytes, zeros on the left.
static int write_padded(gcry_mpi_t value, unsigned char out[CGCRYPT_DH_KEY_BYTES]) {
    size_t written = 0;
    if (gcry_mpi_print(GCRYMPI_FMT_USG, out, CGCRYPT_DH_KEY_BYTES, &written, value) != 0) return 0;
    if (written < CGCRYPT_DH_KEY_BYTES) {
        memmove(out + (CGCRYPT_DH_KEY_BYTES - written), out, written);
        memset(out, 0, CGCRYPT_DH_KEY_BYTES - written);
    }
    return 1;
}

static cgcrypt_dh_pair *pair_with_exponent(gcry_mpi_t exponent) {
    cgcrypt_dh_pair *pair = NULL;
    gcry_mpi_t p = prime();
    gcry_mpi_t generator = gcry_mpi_set_ui(NULL, 2);
    gcry_mpi_t public_value = gcry_mpi_new(1024);
    if (p != NULL && generator != NULL && public_value != NULL) {
        gcry_mpi_powm(public_value, generator, exponent, p);
        pair = gcry_calloc(1, sizeof *pair);
        if (pair != NULL && write_padded(public_value, pair->public_key)) {
            pair->private_exponent = exponent;
            exponent = NULL;
        } else {
            gcry_free(pair);
            pair = NULL;
        }
    }
    gcry_mpi_release(exponent);
    gcry_mpi_release(public_value);
    gcry_mpi_release(generator);
    gcry_mpi_release(p);
    return pair;
}

cgcrypt_dh_pair *cgcrypt_dh_generate(void) {
    gcry_mpi_t exponent = gcry_mpi_snew(CGCRYPT_DH_EXPONENT_BITS);
    if (exponent == NULL) return NULL;
    gcry_mpi_randomize(exponent, CGCRYPT_DH_EXPONENT_BITS, GCRY_STRONG_RANDOM);
    // Exactly CGCRYPT_DH_EXPONENT_BITS long: never 0 or 1, and every key takes as long.
    gcry_mpi_set_highbit(exponent, CGCRYPT_DH_EXPONENT_BITS - 1);
    return pair_with_exponent(exponent);
}

cgcrypt_dh_pair *cgcrypt_dh_pair_with_private_exponent(const unsigned char *exponent, size_t length) {
    gcry_mpi_t value = NULL;
    if (length == 0 || gcry_mpi_scan(&value, GCRYMPI_FMT_USG, exponent, length, NULL) != 0) return NULL;
    gcry_mpi_t secure = gcry_mpi_snew(length * 8);
    if (secure == NULL) {
        gcry_mpi_release(value);
        return NULL;
    }
    gcry_mpi_set(secure, value);
    gcry_mpi_release(value);
    return pair_with_exponent(secure);
}

const unsigned char *cgcrypt_dh_public_key(const cgcrypt_dh_pair *pair) { return pair->public_key; }

void cgcrypt_dh_free(cgcrypt_dh_pair *pair) {
    if (pair == NULL) return;
    gcry_mpi_release(pair->private_exponent);
    gcry_free(pair);
}

/// HKDF-SHA256 (RFC 5869) with no salt (a hash-length run of zeros) and no info, 16 bytes out:
/// PRK = HMAC(zeros, ikm); OKM = first 16 bytes of HMAC(PRK, 0x01).
static int hkdf_sha256(const unsigned char *ikm, size_t ikm_length, unsigned char out[CGCRYPT_AES_KEY_BYTES]) {
    static const unsigned char zero_salt[sha256_bytes];
    static const unsigned char first_block = 1;
    unsigned char prk[sha256_bytes];
    unsigned char block[sha256_bytes];
    int ok = 0;
    gcry_md_hd_t mac = NULL;
    if (gcry_md_open(&mac, GCRY_MD_SHA256, GCRY_MD_FLAG_HMAC | GCRY_MD_FLAG_SECURE) != 0) goto done;
    if (gcry_md_setkey(mac, zero_salt, sizeof zero_salt) != 0) goto done;
    gcry_md_write(mac, ikm, ikm_length);
    memcpy(prk, gcry_md_read(mac, GCRY_MD_SHA256), sizeof prk);
    gcry_md_reset(mac);
    if (gcry_md_setkey(mac, prk, sizeof prk) != 0) goto done;
    gcry_md_write(mac, &first_block, 1);
    memcpy(block, gcry_md_read(mac, GCRY_MD_SHA256), sizeof block);
    memcpy(out, block, CGCRYPT_AES_KEY_BYTES);
    ok = 1;
done:
    gcry_md_close(mac);
    explicit_bzero(prk, sizeof prk);
    explicit_bzero(block, sizeof block);
    return ok;
}

cgcrypt_dh_status cgcrypt_dh_derive(const cgcrypt_dh_pair *pair, const unsigned char *peer_key, size_t peer_length,
                                    unsigned char key[CGCRYPT_AES_KEY_BYTES]) {
    memset(key, 0, CGCRYPT_AES_KEY_BYTES);
    // Any length: KWallet sends 127 to 129 bytes (a sign byte, or a leading zero dropped). The
    // value is checked below; the bound only keeps a hostile answer from costing a huge number.
    if (peer_length == 0 || peer_length > 4 * CGCRYPT_DH_KEY_BYTES) return CGCRYPT_DH_PEER_INVALID;
    cgcrypt_dh_status status = CGCRYPT_DH_FAILED;
    gcry_mpi_t p = prime();
    gcry_mpi_t peer = NULL, limit = NULL, shared = NULL;
    unsigned char shared_bytes[CGCRYPT_DH_KEY_BYTES];
    if (p == NULL || gcry_mpi_scan(&peer, GCRYMPI_FMT_USG, peer_key, peer_length, NULL) != 0) goto done;
    // 1 < peer < p - 1: 0, 1 and p - 1 would make the shared secret 0, 1 or ±1, known to anyone.
    limit = gcry_mpi_new(1024);
    gcry_mpi_sub_ui(limit, p, 1);
    if (gcry_mpi_cmp_ui(peer, 1) <= 0 || gcry_mpi_cmp(peer, limit) >= 0) {
        status = CGCRYPT_DH_PEER_INVALID;
        goto done;
    }
    shared = gcry_mpi_snew(1024);
    gcry_mpi_powm(shared, peer, pair->private_exponent, p);
    if (!write_padded(shared, shared_bytes)) goto done;
    if (shared_bytes[0] == 0) {
        // Providers disagree on a shared secret that starts with a zero byte: libsecret,
        // gnome-keyring and KeePassXC keep it (128 bytes), others strip it before HKDF, and each
        // side then derives another key without an error. One in 256 sessions; a new one agrees.
        status = CGCRYPT_DH_SECRET_AMBIGUOUS;
        goto done;
    }
    if (!hkdf_sha256(shared_bytes, sizeof shared_bytes, key)) goto done;
    status = CGCRYPT_DH_DERIVED;
done:
    explicit_bzero(shared_bytes, sizeof shared_bytes);
    gcry_mpi_release(shared);
    gcry_mpi_release(limit);
    gcry_mpi_release(peer);
    gcry_mpi_release(p);
    return status;
}
