// ECDH on NIST P-256 with libgcrypt's EC point API (see CGcrypt.h).
#include "CGcrypt.h"

#include <string.h>

// Writes an MPI as exactly 32 big-endian bytes (left-padded with zeros). Returns 1, or 0 when it
// does not fit.
static int put_coordinate(unsigned char *out, gcry_mpi_t value) {
    size_t written = 0;
    unsigned char buffer[CGCRYPT_P256_COORDINATE_BYTES];
    if (gcry_mpi_print(GCRYMPI_FMT_USG, buffer, sizeof buffer, &written, value) != 0 || written > sizeof buffer) return 0;
    memset(out, 0, CGCRYPT_P256_COORDINATE_BYTES);
    memcpy(out + CGCRYPT_P256_COORDINATE_BYTES - written, buffer, written);
    explicit_bzero(buffer, sizeof buffer);
    return 1;
}

// k·G to `public_point` and x(k·peer) to `shared_x`; `k` in 1...n-1.
static cgcrypt_p256_status multiply(gcry_ctx_t curve, gcry_mpi_t k, const unsigned char peer[CGCRYPT_P256_POINT_BYTES],
                                    unsigned char public_point[CGCRYPT_P256_POINT_BYTES],
                                    unsigned char shared_x[CGCRYPT_P256_COORDINATE_BYTES]) {
    cgcrypt_p256_status status = CGCRYPT_P256_FAILED;
    gcry_mpi_t px = NULL, py = NULL, one = gcry_mpi_set_ui(NULL, 1);
    gcry_mpi_t x = gcry_mpi_snew(256), y = gcry_mpi_snew(256);
    gcry_mpi_point_t q = gcry_mpi_point_new(0), product = gcry_mpi_point_new(0);
    gcry_mpi_point_t g = gcry_mpi_ec_get_point("g", curve, 1);
    if (peer[0] != 0x04
        || gcry_mpi_scan(&px, GCRYMPI_FMT_USG, peer + 1, CGCRYPT_P256_COORDINATE_BYTES, NULL) != 0
        || gcry_mpi_scan(&py, GCRYMPI_FMT_USG, peer + 1 + CGCRYPT_P256_COORDINATE_BYTES, CGCRYPT_P256_COORDINATE_BYTES, NULL) != 0) {
        status = CGCRYPT_P256_PEER_INVALID;
        goto done;
    }
    gcry_mpi_point_set(q, px, py, one);
    // A point off the curve would leak bits of k through an invalid-curve attack: refuse it.
    if (!gcry_mpi_ec_curve_point(q, curve)) { status = CGCRYPT_P256_PEER_INVALID; goto done; }
    gcry_mpi_ec_mul(product, k, q, curve);
    if (gcry_mpi_ec_get_affine(x, y, product, curve) != 0) { status = CGCRYPT_P256_PEER_INVALID; goto done; }
    if (!put_coordinate(shared_x, x)) goto done;
    gcry_mpi_ec_mul(product, k, g, curve);
    if (gcry_mpi_ec_get_affine(x, y, product, curve) != 0) goto done;
    public_point[0] = 0x04;
    if (!put_coordinate(public_point + 1, x) || !put_coordinate(public_point + 1 + CGCRYPT_P256_COORDINATE_BYTES, y)) goto done;
    status = CGCRYPT_P256_OK;
done:
    if (status != CGCRYPT_P256_OK) explicit_bzero(shared_x, CGCRYPT_P256_COORDINATE_BYTES);
    gcry_mpi_release(px); gcry_mpi_release(py); gcry_mpi_release(one); gcry_mpi_release(x); gcry_mpi_release(y);
    gcry_mpi_point_release(q); gcry_mpi_point_release(product); gcry_mpi_point_release(g);
    return status;
}

static gcry_ctx_t new_curve(void) {
    gcry_ctx_t curve = NULL;
    if (gcry_mpi_ec_new(&curve, NULL, "NIST P-256") != 0) return NULL;
    return curve;
}

cgcrypt_p256_status cgcrypt_p256_ephemeral_ecdh(const unsigned char peer[CGCRYPT_P256_POINT_BYTES],
                                                unsigned char ephemeral_public[CGCRYPT_P256_POINT_BYTES],
                                                unsigned char shared_x[CGCRYPT_P256_COORDINATE_BYTES]) {
    explicit_bzero(shared_x, CGCRYPT_P256_COORDINATE_BYTES);
    gcry_ctx_t curve = new_curve();
    if (curve == NULL) return CGCRYPT_P256_FAILED;
    gcry_mpi_t n = gcry_mpi_ec_get_mpi("n", curve, 1);
    gcry_mpi_t k = gcry_mpi_snew(384);
    // 384 random bits reduced mod n-1, plus 1: uniform in 1...n-1 up to a bias of 2^-128.
    gcry_mpi_t n_minus_one = gcry_mpi_new(256);
    gcry_mpi_sub_ui(n_minus_one, n, 1);
    gcry_mpi_randomize(k, 384, GCRY_STRONG_RANDOM);
    gcry_mpi_mod(k, k, n_minus_one);
    gcry_mpi_add_ui(k, k, 1);
    cgcrypt_p256_status status = multiply(curve, k, peer, ephemeral_public, shared_x);
    gcry_mpi_release(k); gcry_mpi_release(n); gcry_mpi_release(n_minus_one);
    gcry_ctx_release(curve);
    return status;
}

cgcrypt_p256_status cgcrypt_p256_ecdh_with_scalar(const unsigned char *scalar, size_t length,
                                                  const unsigned char peer[CGCRYPT_P256_POINT_BYTES],
                                                  unsigned char public_point[CGCRYPT_P256_POINT_BYTES],
                                                  unsigned char shared_x[CGCRYPT_P256_COORDINATE_BYTES]) {
    explicit_bzero(shared_x, CGCRYPT_P256_COORDINATE_BYTES);
    gcry_ctx_t curve = new_curve();
    if (curve == NULL) return CGCRYPT_P256_FAILED;
    gcry_mpi_t n = gcry_mpi_ec_get_mpi("n", curve, 1);
    gcry_mpi_t k = NULL;
    cgcrypt_p256_status status = CGCRYPT_P256_FAILED;
    if (gcry_mpi_scan(&k, GCRYMPI_FMT_USG, scalar, length, NULL) == 0) {
        gcry_mpi_mod(k, k, n);
        if (gcry_mpi_cmp_ui(k, 0) != 0) status = multiply(curve, k, peer, public_point, shared_x);
    }
    gcry_mpi_release(k); gcry_mpi_release(n);
    gcry_ctx_release(curve);
    return status;
}
