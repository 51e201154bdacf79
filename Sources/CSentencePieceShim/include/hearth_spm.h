// A minimal C ABI over libsentencepiece's C++ SentencePieceProcessor.
// Every function is safe to call with a NULL handle (it returns 0 / -1).
#ifndef HEARTH_SPM_H
#define HEARTH_SPM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hearth_spm hearth_spm;

/// Kinds of vocabulary entries, mirroring sentencepiece's ModelProto.SentencePiece.Type.
enum {
    HEARTH_SPM_NORMAL = 1,
    HEARTH_SPM_UNKNOWN = 2,
    HEARTH_SPM_CONTROL = 3,
    HEARTH_SPM_USER_DEFINED = 4,
    HEARTH_SPM_BYTE = 6,
    HEARTH_SPM_UNUSED = 5,
};

/// Loads a model from a serialized ModelProto. On failure returns NULL and writes a
/// NUL-terminated message into `err` (at most `err_cap` bytes).
hearth_spm *hearth_spm_load(const void *proto, size_t proto_len, char *err, size_t err_cap);
void hearth_spm_free(hearth_spm *spm);

int32_t hearth_spm_vocab_size(const hearth_spm *spm);
int32_t hearth_spm_bos_id(const hearth_spm *spm);
int32_t hearth_spm_eos_id(const hearth_spm *spm);
int32_t hearth_spm_unk_id(const hearth_spm *spm);
int32_t hearth_spm_pad_id(const hearth_spm *spm);

/// Encodes `text` (UTF-8, `len` bytes) to ids. Returns the number of ids the text encodes to;
/// writes at most `cap` of them. Returns -1 on error.
int64_t hearth_spm_encode(const hearth_spm *spm, const char *text, size_t len, int32_t *ids, size_t cap);

/// Copies the piece string of `id` into `buf` (not NUL-terminated) and returns its full length,
/// or -1 if the id is out of range.
int64_t hearth_spm_piece(const hearth_spm *spm, int32_t id, char *buf, size_t cap);

/// The kind of vocabulary entry `id` (HEARTH_SPM_*), or 0 if out of range.
int32_t hearth_spm_kind(const hearth_spm *spm, int32_t id);

/// The piece's score (log-probability for unigram, merge rank for BPE).
float hearth_spm_score(const hearth_spm *spm, int32_t id);

#ifdef __cplusplus
}
#endif

#endif
