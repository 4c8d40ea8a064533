// CKeyringFixture: writes a gnome-keyring keyring file (gnome-keyring's binary format, version 0,
// AES-128-CBC, as gnome-keyring's pkcs11/secret-store/gkm-secret-binary.c writes it), so that the
// scale benchmark can give the login collection thousands of items without thousands of writes.
//
// Why: gnome-keyring rewrites and re-encrypts the whole file on every write, and each write also
// costs time in proportion to the items already there; storing 5,000 items one by one through the
// Secret Service takes tens of minutes (see ScaleBenchmark.swift). Written while the daemon is
// stopped, the file is what gnome-keyring would have saved after those 5,000 stores; it loads it
// when it starts again.
//
// Only standard C types in this header; the implementation uses libgcrypt (MD5, SHA-256,
// AES-128-CBC, nonces), which libsecret has already initialised in the benchmark's process.
#ifndef CKEYRING_FIXTURE_H
#define CKEYRING_FIXTURE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// One item, with KeychainStorage's attributes: `service`, `account`, `username` (= account) and
/// `xdg:schema` = com.pingidentity.PingStorage; label "ACCOUNT (SERVICE)".
typedef struct {
    const char *service;
    const char *account;
    const unsigned char *secret;
    size_t secret_length;
} CKFItem;

/// Writes `count` items to `path` as a keyring labelled `label`, encrypted with `password` (the
/// bytes gnome-keyring was unlocked with, trailing newline included when it read one), through a
/// temporary file renamed over `path` (mode 0600). Item ids are 1…count. Returns 0, or -1 and sets
/// *error to a message to free with ckf_free_string().
int ckf_write_keyring(const char *path, const char *label, const unsigned char *password, size_t password_length,
                      const CKFItem *items, size_t count, char **error);

/// Frees an error message.
void ckf_free_string(char *string);

#ifdef __cplusplus
}
#endif

#endif
