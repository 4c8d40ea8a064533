// CBenchmarkLibsecret: the "raw libsecret" contender of pingstorage-benchmark.
//
// Thin C wrappers around libsecret's synchronous password API (what a C program would call) and
// around the object API's one-round-trip secret load (the floor). The header uses only standard C
// types, so Swift sees no GLib; every function blocks the calling thread for the whole D-Bus
// exchange — call them from a dedicated thread, never from Swift's cooperative pool.
//
// Items use a schema named "com.pingidentity.PingStorage" with SECRET_SCHEMA_DONT_MATCH_NAME and
// the string attributes `service`, `account` and `username` — what KeychainStorage writes. Stores
// set all three (username = account); lookups and clears match `service` + `account`.
//
// Errors: functions that can fail take `char **error`; on failure they return -1 (or NULL) and
// set *error to a message the caller frees with cbl_free_string().
#ifndef CBENCHMARK_LIBSECRET_H
#define CBENCHMARK_LIBSECRET_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Connects libsecret's process-wide SecretService (opens the transport session) so that the
/// first measured call does not pay for it. Returns 0, or -1 and *error.
int cbl_connect(char **error);

/// secret_password_storev_sync: stores `secret` (text) in `collection` ("default", "session" or
/// an object path) with label "ACCOUNT (SERVICE)". Returns 0, or -1 and *error.
int cbl_store(const char *collection, const char *service, const char *account, const char *secret,
              char **error);

/// Drops libsecret's process-wide SecretService (secret_service_disconnect) and connects again:
/// after the provider was restarted, the cached one holds a session the new provider does not
/// know. Returns 0, or -1 and *error.
int cbl_reconnect(char **error);

/// Stores `count` secrets at once with libsecret's asynchronous secret_password_storev (item i:
/// accounts[i], secrets[i]), at most `in_flight` outstanding, on a GMainContext of its own that
/// the calling thread iterates until the last callback ran: what a C program storing many items
/// at once would write. Returns 0, or -1 and *error (the first failure; the others still finish).
int cbl_store_concurrently(const char *collection, const char *service, const char *const *accounts,
                           const char *const *secrets, size_t count, size_t in_flight, char **error);

/// secret_password_lookupv_binary_sync. Returns 1 when found (its length in *length), 0 when
/// there is no item, -1 and *error on failure.
int cbl_lookup(const char *service, const char *account, size_t *length, char **error);

/// secret_password_clearv_sync. Returns 1 when something was deleted, 0 when there was nothing,
/// -1 and *error on failure.
int cbl_clear(const char *service, const char *account, char **error);

/// An item found once, for the floor measurement.
typedef struct CBLItem CBLItem;

/// Finds the item of (service, account) with secret_service_search_sync (no secret loaded).
/// Returns NULL and sets *error (also when there is no such item).
CBLItem *cbl_find_item(const char *service, const char *account, char **error);

/// secret_item_load_secret_sync on an already-found item: one GetSecret round trip. Returns 1
/// with the secret's length in *length, 0 when the item had no secret (locked), -1 and *error.
int cbl_item_load_secret(CBLItem *item, size_t *length, char **error);

/// Releases an item from cbl_find_item.
void cbl_item_free(CBLItem *item);

/// Frees an error message.
void cbl_free_string(char *string);

#ifdef __cplusplus
}
#endif

#endif
