// gnome-keyring's binary keyring format, written: see include/CKeyringFixture.h. The layout
// follows gkm_secret_binary_write() of gnome-keyring 42 (big-endian integers; a string is its
// length then its bytes, NULL is 0xffffffff):
//   "GnomeKeyring\n\r\0\n", 4 zero bytes (version 0.0, AES, MD5), label, mtime, ctime (64 bits
//   each), flags, lock timeout, hash iterations, salt (8 bytes), 4 reserved zeros, item count,
//   then per item: id, type, hashed attributes (count, then name, 0, MD5 hex of the value);
//   then the size of the encrypted part and the part itself: MD5 of what follows, then per item
//   label, secret, ctime, mtime, reserved NULL string, 4 reserved zeros, attributes in clear,
//   an empty ACL; zero-padded to 16 bytes, AES-128-CBC with key and IV from SHA-256 iterated over
//   password + salt (egg_symkey_generate_simple).
#include "CKeyringFixture.h"

#include <gcrypt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

typedef struct {
    unsigned char *data;
    size_t length;
    size_t capacity;
    int failed;
} Buffer;

static void put(Buffer *buffer, const void *bytes, size_t count) {
    if (buffer->failed) return;
    if (buffer->length + count > buffer->capacity) {
        size_t capacity = buffer->capacity ? buffer->capacity : 4096;
        while (capacity < buffer->length + count) capacity *= 2;
        unsigned char *grown = realloc(buffer->data, capacity);
        if (grown == NULL) {
            buffer->failed = 1;
            return;
        }
        buffer->data = grown;
        buffer->capacity = capacity;
    }
    memcpy(buffer->data + buffer->length, bytes, count);
    buffer->length += count;
}

static void put_u32(Buffer *buffer, uint32_t value) {
    unsigned char bytes[4] = { value >> 24, value >> 16, value >> 8, value };
    put(buffer, bytes, 4);
}

static void put_time(Buffer *buffer, uint64_t value) {
    put_u32(buffer, (uint32_t) (value >> 32));
    put_u32(buffer, (uint32_t) value);
}

static void put_bytes(Buffer *buffer, const void *bytes, size_t count) {
    put_u32(buffer, (uint32_t) count);
    put(buffer, bytes, count);
}

static void put_string(Buffer *buffer, const char *string) {
    if (string == NULL) {
        put_u32(buffer, 0xffffffffu);
    } else {
        put_bytes(buffer, string, strlen(string));
    }
}

static const char *const attribute_names[] = { "service", "account", "username", "xdg:schema" };
enum { ATTRIBUTE_COUNT = 4 };

static void attribute_values(const CKFItem *item, const char *values[ATTRIBUTE_COUNT]) {
    values[0] = item->service;
    values[1] = item->account;
    values[2] = item->account;
    values[3] = "com.pingidentity.PingStorage";
}

// The hashed form gnome-keyring keeps outside the encrypted part (for searches while locked):
// the lowercase hex MD5 of each string value.
static void put_hashed_attributes(Buffer *buffer, const CKFItem *item) {
    const char *values[ATTRIBUTE_COUNT];
    attribute_values(item, values);
    put_u32(buffer, ATTRIBUTE_COUNT);
    for (int i = 0; i < ATTRIBUTE_COUNT; i++) {
        unsigned char digest[16];
        char hex[33];
        gcry_md_hash_buffer(GCRY_MD_MD5, digest, values[i], strlen(values[i]));
        for (int j = 0; j < 16; j++) snprintf(hex + 2 * j, 3, "%02x", digest[j]);
        put_string(buffer, attribute_names[i]);
        put_u32(buffer, 0);
        put_string(buffer, hex);
    }
}

static void put_attributes(Buffer *buffer, const CKFItem *item) {
    const char *values[ATTRIBUTE_COUNT];
    attribute_values(item, values);
    put_u32(buffer, ATTRIBUTE_COUNT);
    for (int i = 0; i < ATTRIBUTE_COUNT; i++) {
        put_string(buffer, attribute_names[i]);
        put_u32(buffer, 0);
        put_string(buffer, values[i]);
    }
}

static int fail(char **error, const char *what, const char *detail) {
    if (error != NULL) {
        size_t size = strlen(what) + (detail ? strlen(detail) : 0) + 3;
        *error = malloc(size);
        if (*error != NULL) snprintf(*error, size, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
    }
    return -1;
}

// egg_symkey_generate_simple with SHA-256 for AES-128: one pass gives 32 bytes, key then IV.
static void derive_key(const unsigned char *password, size_t password_length, const unsigned char salt[8],
                       uint32_t iterations, unsigned char key[16], unsigned char iv[16]) {
    unsigned char digest[32];
    gcry_md_hd_t md;
    gcry_md_open(&md, GCRY_MD_SHA256, 0);
    gcry_md_write(md, password, password_length);
    gcry_md_write(md, salt, 8);
    memcpy(digest, gcry_md_read(md, 0), 32);
    for (uint32_t i = 1; i < iterations; i++) {
        gcry_md_reset(md);
        gcry_md_write(md, digest, 32);
        memcpy(digest, gcry_md_read(md, 0), 32);
    }
    gcry_md_close(md);
    memcpy(key, digest, 16);
    memcpy(iv, digest + 16, 16);
    memset(digest, 0, sizeof digest);
}

int ckf_write_keyring(const char *path, const char *label, const unsigned char *password, size_t password_length,
                      const CKFItem *items, size_t count, char **error) {
    (void) gcry_check_version(NULL);  // idempotent; libsecret has initialised libgcrypt already
    uint64_t now = (uint64_t) time(NULL);
    uint32_t iterations = 1000 + (uint32_t) (now % 3000);  // gnome-keyring picks 1000…4095
    unsigned char salt[8];
    gcry_create_nonce(salt, sizeof salt);

    Buffer head = { 0 };
    put(&head, "GnomeKeyring\n\r\0\n", 16);
    put(&head, "\0\0\0\0", 4);
    put_string(&head, label);
    put_time(&head, now);
    put_time(&head, now);
    put_u32(&head, 0);  // flags: no lock on idle
    put_u32(&head, 0);  // lock timeout
    put_u32(&head, iterations);
    put(&head, salt, 8);
    for (int i = 0; i < 4; i++) put_u32(&head, 0);
    put_u32(&head, (uint32_t) count);
    for (size_t i = 0; i < count; i++) {
        put_u32(&head, (uint32_t) (i + 1));
        put_u32(&head, 0);  // item type: generic secret (the schema comes from xdg:schema)
        put_hashed_attributes(&head, &items[i]);
    }

    Buffer secret = { 0 };
    put(&secret, "0123456789abcdef", 16);  // room for the MD5 of what follows
    for (size_t i = 0; i < count; i++) {
        size_t size = strlen(items[i].account) + strlen(items[i].service) + 4;
        char *item_label = malloc(size);
        if (item_label == NULL) {
            secret.failed = 1;
            break;
        }
        snprintf(item_label, size, "%s (%s)", items[i].account, items[i].service);
        put_string(&secret, item_label);
        free(item_label);
        put_bytes(&secret, items[i].secret, items[i].secret_length);
        put_time(&secret, now);
        put_time(&secret, now);
        put_string(&secret, NULL);
        for (int j = 0; j < 4; j++) put_u32(&secret, 0);
        put_attributes(&secret, &items[i]);
        put_u32(&secret, 0);  // no ACL
    }
    while (!secret.failed && secret.length % 16 != 0) put(&secret, "", 1);

    int result = 0;
    if (head.failed || secret.failed) {
        result = fail(error, "out of memory", NULL);
        goto done;
    }
    gcry_md_hash_buffer(GCRY_MD_MD5, secret.data, secret.data + 16, secret.length - 16);

    unsigned char key[16], iv[16];
    derive_key(password, password_length, salt, iterations, key, iv);
    gcry_cipher_hd_t cipher;
    gcry_error_t status = gcry_cipher_open(&cipher, GCRY_CIPHER_AES128, GCRY_CIPHER_MODE_CBC, 0);
    if (status == 0) status = gcry_cipher_setkey(cipher, key, 16);
    if (status == 0) status = gcry_cipher_setiv(cipher, iv, 16);
    if (status == 0) status = gcry_cipher_encrypt(cipher, secret.data, secret.length, NULL, 0);
    gcry_cipher_close(cipher);
    memset(key, 0, sizeof key);
    if (status != 0) {
        result = fail(error, "AES-128-CBC", gcry_strerror(status));
        goto done;
    }
    put_u32(&head, (uint32_t) secret.length);
    put(&head, secret.data, secret.length);

    size_t temporary_size = strlen(path) + 16;
    char *temporary = malloc(temporary_size);
    if (head.failed || temporary == NULL) {
        free(temporary);
        result = fail(error, "out of memory", NULL);
        goto done;
    }
    snprintf(temporary, temporary_size, "%s.fixture", path);
    mode_t previous = umask(077);
    FILE *file = fopen(temporary, "wb");
    umask(previous);
    if (file == NULL) {
        result = fail(error, "cannot create", temporary);
    } else {
        size_t written = fwrite(head.data, 1, head.length, file);
        if (fclose(file) != 0 || written != head.length) {
            result = fail(error, "cannot write", temporary);
        } else if (rename(temporary, path) != 0) {
            result = fail(error, "cannot rename over", path);
        }
    }
    free(temporary);

done:
    if (secret.data != NULL) memset(secret.data, 0, secret.capacity);
    free(secret.data);
    free(head.data);
    return result;
}

void ckf_free_string(char *string) {
    free(string);
}
