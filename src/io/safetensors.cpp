// safetensors writer and validating reader; the format is described in safetensors.h and
// docs/checkpoint_format.md. Files are written through PATH.tmp + fsync + rename.
#include "io/safetensors.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>
#include <tuple>

#include <fcntl.h>
#include <unistd.h>

#include "core/paths.h"
#include "io/json_file.h"

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "safetensors data is little-endian; so must the host be");

namespace shardlab {

namespace {

constexpr uint64_t kMaxHeaderBytes = 100000000;  // Python's safetensors refuses larger headers too
const char* kMetadataKey = "__metadata__";

std::runtime_error err(const std::string& path, const std::string& what) {
  return std::runtime_error("safetensors " + path + ": " + what);
}

// prod(shape) * elem, or throws on a negative dimension or overflow.
size_t checked_nbytes(const std::vector<int64_t>& shape, size_t elem, const std::string& path,
                      const std::string& name) {
  size_t total = elem;
  for (int64_t d : shape) {
    if (d < 0) throw err(path, "tensor '" + name + "' has a negative dimension");
    if (d != 0 && total > SIZE_MAX / static_cast<size_t>(d))
      throw err(path, "tensor '" + name + "' is too large (size overflows)");
    total *= static_cast<size_t>(d);
  }
  return total;
}

std::string shape_str(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

}  // namespace

size_t dtype_size(const std::string& dtype) {
  static const std::map<std::string, size_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E5M2", 1}, {"F8_E4M3", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8}};
  auto it = sizes.find(dtype);
  if (it == sizes.end()) throw std::runtime_error("safetensors: unknown dtype '" + dtype + "'");
  return it->second;
}

// ---------------------------------------------------------------------------------------------
// Writer

void write_safetensors(const std::string& path, const std::vector<TensorEntry>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  nlohmann::ordered_json header = nlohmann::ordered_json::object();  // keeps the order given
  if (!metadata.empty()) header[kMetadataKey] = metadata;
  std::set<std::string> seen;
  size_t offset = 0;
  for (const TensorEntry& t : tensors) {
    if (t.name.empty()) throw err(path, "tensor with an empty name");
    if (t.name == kMetadataKey) throw err(path, "'__metadata__' is reserved, not a tensor name");
    if (!seen.insert(t.name).second) throw err(path, "duplicate tensor name '" + t.name + "'");
    size_t elem;
    try {
      elem = dtype_size(t.dtype);
    } catch (const std::runtime_error&) {
      throw err(path, "tensor '" + t.name + "' has unknown dtype '" + t.dtype + "'");
    }
    size_t expect = checked_nbytes(t.shape, elem, path, t.name);
    if (expect != t.nbytes)
      throw err(path, "tensor '" + t.name + "' has " + std::to_string(t.nbytes) + " bytes, but " + t.dtype + " " +
                          shape_str(t.shape) + " needs " + std::to_string(expect));
    if (t.nbytes > 0 && t.data == nullptr) throw err(path, "tensor '" + t.name + "' has no data");
    header[t.name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {offset, offset + t.nbytes}}};
    offset += t.nbytes;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // 8 + N is then a multiple of 8: aligned data start
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(text.size()) >> (8 * i));

  std::vector<ByteSpan> pieces = {{len, 8}, {text.data(), text.size()}};
  for (const TensorEntry& t : tensors)
    if (t.nbytes > 0) pieces.push_back({t.data, t.nbytes});
  write_file_atomic(path, pieces);
}

// ---------------------------------------------------------------------------------------------
// Reader

SafetensorsFile SafetensorsFile::read(const std::string& path) { return parse(read_file_bytes(path), path); }

SafetensorsFile SafetensorsFile::parse(std::vector<uint8_t> bytes, const std::string& label) {
  SafetensorsFile f;
  f.path_ = label;
  f.bytes_ = std::move(bytes);
  const size_t size = f.bytes_.size();
  if (size < 8)
    throw err(label, "only " + std::to_string(size) + " bytes, shorter than the 8-byte header length (truncated)");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<uint64_t>(f.bytes_[i]) << (8 * i);
  if (n > kMaxHeaderBytes || n > size - 8)
    throw err(label, "header length " + std::to_string(n) + " does not fit in a file of " + std::to_string(size) +
                         " bytes (truncated, or not a safetensors file)");
  f.data_start_ = 8 + static_cast<size_t>(n);
  const size_t data_size = size - f.data_start_;

  const char* text = reinterpret_cast<const char*>(f.bytes_.data() + 8);
  f.header_ = parse_json_text(std::string(text, text + n), "safetensors " + label + ": the header");
  if (!f.header_.is_object()) throw err(label, "header is not a JSON object");

  for (auto it = f.header_.begin(); it != f.header_.end(); ++it) {
    const std::string& name = it.key();
    const nlohmann::json& v = it.value();
    if (name == kMetadataKey) {
      if (!v.is_object()) throw err(label, "__metadata__ is not an object");
      for (auto m = v.begin(); m != v.end(); ++m)
        if (!m.value().is_string()) throw err(label, "__metadata__ value of '" + m.key() + "' is not a string");
      continue;
    }
    const std::string bad = "header entry '" + name + "' ";
    if (!v.is_object()) throw err(label, bad + "is not an object");
    if (!v.contains("dtype") || !v["dtype"].is_string()) throw err(label, bad + "has no string 'dtype'");
    if (!v.contains("shape") || !v["shape"].is_array()) throw err(label, bad + "has no array 'shape'");
    if (!v.contains("data_offsets") || !v["data_offsets"].is_array() || v["data_offsets"].size() != 2 ||
        !v["data_offsets"][0].is_number_unsigned() || !v["data_offsets"][1].is_number_unsigned())
      throw err(label, bad + "needs 'data_offsets': [begin, end] with non-negative integers");
    std::vector<int64_t> shape;
    for (const nlohmann::json& d : v["shape"]) {
      if (!d.is_number_unsigned()) throw err(label, bad + "has a shape entry that is not a non-negative integer");
      shape.push_back(d.get<int64_t>());
    }
    const std::string dtype = v["dtype"].get<std::string>();
    size_t elem;
    try {
      elem = dtype_size(dtype);
    } catch (const std::runtime_error&) {
      throw err(label, bad + "has unknown dtype '" + dtype + "'");
    }
    const uint64_t begin = v["data_offsets"][0].get<uint64_t>(), end = v["data_offsets"][1].get<uint64_t>();
    if (begin > end) throw err(label, bad + "has data_offsets begin > end");
    if (end > data_size)
      throw err(label, "tensor '" + name + "' ends at data byte " + std::to_string(end) + " but the data section has " +
                           std::to_string(data_size) + " bytes (file truncated)");
    const size_t expect = checked_nbytes(shape, elem, label, name);
    if (end - begin != expect)
      throw err(label, "tensor '" + name + "' spans " + std::to_string(end - begin) + " bytes, but " + dtype + " " +
                           shape_str(shape) + " needs " + std::to_string(expect));
    f.spans_[name] = Span{static_cast<size_t>(begin), static_cast<size_t>(end)};
    f.order_.push_back(name);
  }

  // The tensors must tile [0, data_size) exactly, as in Python's safetensors.
  std::sort(f.order_.begin(), f.order_.end(), [&](const std::string& a, const std::string& b) {
    const Span &sa = f.spans_.at(a), &sb = f.spans_.at(b);
    return std::tie(sa.begin, sa.end, a) < std::tie(sb.begin, sb.end, b);
  });
  size_t expected = 0;
  for (const std::string& name : f.order_) {
    const Span& s = f.spans_.at(name);
    if (s.begin < expected) throw err(label, "tensor '" + name + "' overlaps the tensor before it");
    if (s.begin > expected)
      throw err(label, "gap of " + std::to_string(s.begin - expected) + " bytes before tensor '" + name + "'");
    expected = s.end;
  }
  if (expected != data_size)
    throw err(label,
              std::to_string(data_size - expected) + " bytes after the last tensor (not a valid safetensors file)");
  return f;
}

const SafetensorsFile::Span& SafetensorsFile::span(const std::string& name) const {
  auto it = spans_.find(name);
  if (it == spans_.end()) throw err(path_, "no tensor named '" + name + "'");
  return it->second;
}

bool SafetensorsFile::has(const std::string& name) const { return spans_.count(name) > 0; }

std::vector<std::string> SafetensorsFile::names() const { return order_; }

void SafetensorsFile::copy_to(const std::string& name, const std::string& expected_dtype, void* dst,
                              size_t nbytes) const {
  const Span& s = span(name);
  const std::string actual = dtype(name);
  if (actual != expected_dtype)
    throw err(path_, "tensor '" + name + "' has dtype " + actual + ", expected " + expected_dtype);
  if (s.end - s.begin != nbytes)
    throw err(path_, "tensor '" + name + "' has " + std::to_string(s.end - s.begin) + " bytes, expected " +
                         std::to_string(nbytes) + " (shape " + shape_str(shape(name)) + ")");
  if (nbytes > 0) std::memcpy(dst, bytes_.data() + data_start_ + s.begin, nbytes);
}

std::vector<int64_t> SafetensorsFile::shape(const std::string& name) const {
  span(name);
  return header_[name]["shape"].get<std::vector<int64_t>>();
}

std::string SafetensorsFile::dtype(const std::string& name) const {
  span(name);
  return header_[name]["dtype"].get<std::string>();
}

size_t SafetensorsFile::nbytes(const std::string& name) const {
  const Span& s = span(name);
  return s.end - s.begin;
}

std::map<std::string, std::string> SafetensorsFile::metadata() const {
  if (!header_.contains(kMetadataKey)) return {};
  return header_[kMetadataKey].get<std::map<std::string, std::string>>();
}

}  // namespace shardlab
