#include "hearth_spm.h"

#include <sentencepiece_processor.h>

#include <cstring>
#include <string>
#include <vector>

struct hearth_spm {
    sentencepiece::SentencePieceProcessor processor;
};

static void write_error(char *err, size_t cap, const std::string &message) {
    if (err == nullptr || cap == 0) return;
    size_t n = message.size() < cap - 1 ? message.size() : cap - 1;
    std::memcpy(err, message.data(), n);
    err[n] = '\0';
}

extern "C" hearth_spm *hearth_spm_load(const void *proto, size_t proto_len, char *err, size_t err_cap) {
    if (proto == nullptr) {
        write_error(err, err_cap, "no model data");
        return nullptr;
    }
    auto *spm = new (std::nothrow) hearth_spm();
    if (spm == nullptr) {
        write_error(err, err_cap, "out of memory");
        return nullptr;
    }
    try {
        auto status = spm->processor.LoadFromSerializedProto(
            std::string(static_cast<const char *>(proto), proto_len));
        if (!status.ok()) {
            write_error(err, err_cap, status.ToString());
            delete spm;
            return nullptr;
        }
    } catch (const std::exception &e) {
        write_error(err, err_cap, e.what());
        delete spm;
        return nullptr;
    } catch (...) {
        write_error(err, err_cap, "unknown sentencepiece error");
        delete spm;
        return nullptr;
    }
    return spm;
}

extern "C" void hearth_spm_free(hearth_spm *spm) { delete spm; }

extern "C" int32_t hearth_spm_vocab_size(const hearth_spm *spm) { return spm ? spm->processor.GetPieceSize() : 0; }
extern "C" int32_t hearth_spm_bos_id(const hearth_spm *spm) { return spm ? spm->processor.bos_id() : -1; }
extern "C" int32_t hearth_spm_eos_id(const hearth_spm *spm) { return spm ? spm->processor.eos_id() : -1; }
extern "C" int32_t hearth_spm_unk_id(const hearth_spm *spm) { return spm ? spm->processor.unk_id() : -1; }
extern "C" int32_t hearth_spm_pad_id(const hearth_spm *spm) { return spm ? spm->processor.pad_id() : -1; }

extern "C" int64_t hearth_spm_encode(const hearth_spm *spm, const char *text, size_t len, int32_t *ids, size_t cap) {
    if (spm == nullptr || (text == nullptr && len > 0)) return -1;
    try {
        std::vector<int> out;
        auto status = spm->processor.Encode(std::string(text ? text : "", len), &out);
        if (!status.ok()) return -1;
        size_t n = out.size() < cap ? out.size() : cap;
        for (size_t i = 0; i < n; i++) ids[i] = out[i];
        return static_cast<int64_t>(out.size());
    } catch (...) {
        return -1;
    }
}

extern "C" int64_t hearth_spm_piece(const hearth_spm *spm, int32_t id, char *buf, size_t cap) {
    if (spm == nullptr || id < 0 || id >= spm->processor.GetPieceSize()) return -1;
    const std::string &piece = spm->processor.IdToPiece(id);
    size_t n = piece.size() < cap ? piece.size() : cap;
    if (n > 0) std::memcpy(buf, piece.data(), n);
    return static_cast<int64_t>(piece.size());
}

extern "C" int32_t hearth_spm_kind(const hearth_spm *spm, int32_t id) {
    if (spm == nullptr || id < 0 || id >= spm->processor.GetPieceSize()) return 0;
    const auto &p = spm->processor;
    if (p.IsUnknown(id)) return HEARTH_SPM_UNKNOWN;
    if (p.IsControl(id)) return HEARTH_SPM_CONTROL;
    if (p.IsByte(id)) return HEARTH_SPM_BYTE;
    if (p.IsUnused(id)) return HEARTH_SPM_UNUSED;
    return HEARTH_SPM_NORMAL;
}

extern "C" float hearth_spm_score(const hearth_spm *spm, int32_t id) {
    if (spm == nullptr || id < 0 || id >= spm->processor.GetPieceSize()) return 0;
    return spm->processor.GetScore(id);
}
