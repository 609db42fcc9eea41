// The Hugging Face safetensors file format, so Python's `safetensors` package (and anything else
// that speaks the format) can open what the trainer writes:
//
//   [8 bytes: N, little-endian uint64] [N bytes: JSON header, space-padded] [data section]
//   header = {"__metadata__": {"k": "v"}, "name": {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}, ...}
//
// Offsets are relative to the data start; 8 + N is a multiple of 8. Tensors are written in the
// order given, back to back, so a flat parameter buffer becomes the data section byte for byte.
// Leaves out: memory mapping (files are read whole), byte-order conversion (little-endian hosts
// only, as the format requires), and any notion of what the tensors mean (see checkpoint.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/files.h"

namespace shardlab {

// One tensor to write. `data` must stay valid for the duration of write_safetensors; `nbytes`
// must equal prod(shape) * dtype_size(dtype).
struct TensorEntry {
  std::string name;
  std::string dtype;  // "F32", "F64", "BF16", "U16", ... (safetensors spelling)
  std::vector<int64_t> shape;
  const void* data;
  size_t nbytes;
};

// Bytes per element of a safetensors dtype string; throws std::runtime_error for unknown dtypes.
size_t dtype_size(const std::string& dtype);

// Writes PATH.tmp, fsyncs, renames it to PATH: readers never see a half-written file under PATH.
// Throws on invalid entries (bad dtype, nbytes != shape * dtype size, duplicate or empty names).
void write_safetensors(const std::string& path, const std::vector<TensorEntry>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

// A whole safetensors file in memory, validated when opened: header length in range, header is a
// JSON object, every tensor has a known dtype, a non-negative shape whose size matches its byte
// range, and the tensors tile the data section exactly (no overlap, no gap, no trailing bytes —
// the same rules Python's safetensors enforces), so truncation is always caught.
class SafetensorsFile {
 public:
  static SafetensorsFile read(const std::string& path);
  // Same validation on bytes already in memory (checkpoint.cpp hashes them first); `label` names
  // the file in error messages.
  static SafetensorsFile parse(std::vector<uint8_t> bytes, const std::string& label);

  bool has(const std::string& name) const;
  const nlohmann::json& header() const { return header_; }
  std::vector<std::string> names() const;  // in data-offset order
  // Copies the tensor's bytes into dst; throws if it is missing, its dtype is not expected_dtype,
  // or its size is not nbytes.
  void copy_to(const std::string& name, const std::string& expected_dtype, void* dst, size_t nbytes) const;
  std::vector<int64_t> shape(const std::string& name) const;
  std::string dtype(const std::string& name) const;
  size_t nbytes(const std::string& name) const;
  std::map<std::string, std::string> metadata() const;
  const std::string& path() const { return path_; }

 private:
  struct Span {
    size_t begin, end;
  };
  const Span& span(const std::string& name) const;  // throws if missing

  std::string path_;
  std::vector<uint8_t> bytes_;  // the whole file
  size_t data_start_ = 0;       // 8 + N
  nlohmann::json header_;
  std::map<std::string, Span> spans_;  // offsets relative to data_start_
  std::vector<std::string> order_;     // names by data offset
};

}  // namespace shardlab
