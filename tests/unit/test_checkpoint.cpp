// Checkpoint files: sha256 against the FIPS 180-2 vectors, safetensors round trips and rejection
// of damaged files, and the checkpoint directory protocol (latest, checksums, leftovers of a crash).
// Runs without Python: the format is checked byte by byte here.
#include <catch2/catch.hpp>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "io/sha256.h"

using namespace shardlab;
namespace fs = std::filesystem;
using Catch::Contains;

namespace {

// A fresh directory under /tmp, removed on scope exit.
struct TempDir {
  fs::path path;
  TempDir() {
    static std::atomic<int> counter{0};
    path = fs::temp_directory_path() /
           ("shardlab_ckpt_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// Whole files as byte strings.
std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}
void spit(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

std::string sha_of(const std::string& s) { return sha256_hex(s.data(), s.size()); }

uint64_t header_len(const std::string& file) {
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= uint64_t(uint8_t(file[i])) << (8 * i);
  return n;
}

// A safetensors file built by hand from header text and data bytes.
std::string raw_safetensors(const std::string& header, const std::string& data) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[i] = char(uint8_t(uint64_t(header.size()) >> (8 * i)));
  return out + header + data;
}

}  // namespace

TEST_CASE("sha256 matches the FIPS 180-2 test vectors", "[checkpoint]") {
  CHECK(sha_of("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha_of("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  // 448 bits: the length no longer fits in the first padded block.
  CHECK(sha_of("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha_of("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrs"
               "tnopqrstu") == "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
  // Lengths around the padding boundary (55 fits the length in the same block, 56 does not),
  // digests from Python's hashlib.
  CHECK(sha_of(std::string(55, 'a')) == "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  CHECK(sha_of(std::string(56, 'a')) == "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  CHECK(sha_of(std::string(64, 'a')) == "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  CHECK(sha_of(std::string(119, 'a')) == "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb");
  const std::string million(1000000, 'a');
  const std::string expect_million = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  CHECK(sha_of(million) == expect_million);

  SECTION("incremental updates in uneven pieces give the same digest") {
    Sha256 s;
    for (size_t pos = 0, n = 1; pos < million.size(); pos += n, n = n * 3 % 157 + 1)  // n: 1, 4, 13, 40, 121, 50, ...
      s.update(million.data() + pos, std::min(n, million.size() - pos));
    CHECK(s.hex_digest() == expect_million);
  }
  SECTION("of a file") {
    TempDir tmp;
    spit(tmp / "a", million);
    CHECK(sha256_hex_of_file(tmp / "a") == expect_million);
    CHECK_THROWS_WITH(sha256_hex_of_file(tmp / "missing"), Contains("missing") && Contains("cannot open"));
  }
}

TEST_CASE("safetensors round trip of F32, F64 and BF16 tensors", "[checkpoint]") {
  TempDir tmp;
  const std::string path = tmp / "t.safetensors";
  std::vector<float> w = {1.5f, -2.25f, 3.0f, 1e-30f, 7.0f, -0.0f};            // (2, 3)
  std::vector<double> b = {0.1, 0.2, -1e300, 4.0};                             // (4)
  std::vector<uint16_t> h = {0x3f80, 0xc000, 0x7fc0, 0x0001, 0xffff, 0x1234};  // (3, 2) bf16 bits
  float scalar = 42.0f, s2 = 0;                                                // ()
  std::vector<TensorEntry> tensors = {
      {"w", "F32", {2, 3}, w.data(), w.size() * 4},
      {"b", "F64", {4}, b.data(), b.size() * 8},
      {"h", "BF16", {3, 2}, h.data(), h.size() * 2},
      {"empty", "F32", {0, 5}, nullptr, 0},
      {"s", "F32", {}, &scalar, 4},
  };
  write_safetensors(path, tensors, {{"step", "40"}, {"note", "hello \"json\""}});
  CHECK_FALSE(fs::exists(path + ".tmp"));

  // Layout: 8-byte length, space-padded header, then the tensors back to back in the order given.
  const std::string file = slurp(path);
  const size_t data_start = 8 + header_len(file);
  CHECK(data_start % 8 == 0);
  CHECK(file[8] == '{');
  std::string expect_data;
  for (const TensorEntry& t : tensors) expect_data.append(static_cast<const char*>(t.data), t.nbytes);
  CHECK(file.substr(data_start) == expect_data);
  const auto header = nlohmann::json::parse(file.substr(8, data_start - 8));
  CHECK(header["w"]["data_offsets"] == nlohmann::json({0, 24}));
  CHECK(header["b"]["data_offsets"] == nlohmann::json({24, 56}));
  CHECK(header["h"]["dtype"] == "BF16");

  const SafetensorsFile f = SafetensorsFile::read(path);
  CHECK(f.names() == std::vector<std::string>{"w", "b", "h", "empty", "s"});
  CHECK(f.has("w"));
  CHECK_FALSE(f.has("__metadata__"));
  CHECK(f.dtype("b") == "F64");
  CHECK(f.shape("w") == std::vector<int64_t>{2, 3});
  CHECK(f.shape("empty") == std::vector<int64_t>{0, 5});
  CHECK(f.shape("s").empty());
  CHECK(f.nbytes("h") == 12);
  CHECK(f.metadata() == std::map<std::string, std::string>{{"step", "40"}, {"note", "hello \"json\""}});
  CHECK(f.header()["__metadata__"]["step"] == "40");

  std::vector<float> w2(6);
  std::vector<double> b2(4);
  std::vector<uint16_t> h2(6);
  f.copy_to("w", "F32", w2.data(), 24);
  f.copy_to("b", "F64", b2.data(), 32);
  f.copy_to("h", "BF16", h2.data(), 12);
  f.copy_to("s", "F32", &s2, 4);
  f.copy_to("empty", "F32", nullptr, 0);
  CHECK(std::memcmp(w2.data(), w.data(), 24) == 0);  // bytes, so -0.0f counts too
  CHECK(std::memcmp(b2.data(), b.data(), 32) == 0);
  CHECK(h2 == h);
  CHECK(s2 == 42.0f);

  CHECK_THROWS_WITH(f.copy_to("w", "F64", w2.data(), 24), Contains("dtype F32, expected F64"));
  CHECK_THROWS_WITH(f.copy_to("w", "F32", w2.data(), 20), Contains("24 bytes, expected 20"));
  CHECK_THROWS_WITH(f.copy_to("nope", "F32", w2.data(), 24), Contains("no tensor named 'nope'"));
  CHECK_THROWS_WITH(f.shape("nope"), Contains(path));

  SECTION("no metadata means no __metadata__ key") {
    write_safetensors(path, {tensors[0]});
    CHECK(SafetensorsFile::read(path).metadata().empty());
    CHECK_FALSE(SafetensorsFile::read(path).header().contains("__metadata__"));
  }
}

TEST_CASE("safetensors rejects invalid tensors on write", "[checkpoint]") {
  TempDir tmp;
  const std::string path = tmp / "bad.safetensors";
  float x[6] = {};
  CHECK_THROWS_WITH(write_safetensors(path, {{"x", "F32", {2, 3}, x, 20}}), Contains("needs 24"));
  CHECK_THROWS_WITH(write_safetensors(path, {{"x", "F17", {6}, x, 24}}), Contains("unknown dtype 'F17'"));
  CHECK_THROWS_WITH(write_safetensors(path, {{"x", "F32", {6}, x, 24}, {"x", "F32", {6}, x, 24}}),
                    Contains("duplicate"));
  CHECK_THROWS_WITH(write_safetensors(path, {{"__metadata__", "F32", {6}, x, 24}}), Contains("reserved"));
  CHECK_THROWS_WITH(write_safetensors(path, {{"x", "F32", {-1, 3}, x, 24}}), Contains("negative"));
  CHECK_THROWS_WITH(write_safetensors(tmp / "no/dir/x.safetensors", {{"x", "F32", {6}, x, 24}}),
                    Contains("cannot create"));
  CHECK_FALSE(fs::exists(path));
}

TEST_CASE("safetensors rejects truncated and corrupt files", "[checkpoint]") {
  TempDir tmp;
  const std::string path = tmp / "t.safetensors";
  std::vector<float> a(10, 1.0f), b(7, 2.0f);
  write_safetensors(path, {{"a", "F32", {10}, a.data(), 40}, {"b", "F32", {7}, b.data(), 28}});
  const std::string good = slurp(path);
  REQUIRE_NOTHROW(SafetensorsFile::read(path));

  SECTION("truncated by one byte") {
    fs::resize_file(path, good.size() - 1);
    CHECK_THROWS_WITH(SafetensorsFile::read(path), Contains(path) && Contains("truncated"));
  }
  SECTION("other damage") {
    spit(path, good + '\0');
    CHECK_THROWS_WITH(SafetensorsFile::read(path), Contains("1 bytes after the last tensor"));
    spit(path, good.substr(0, 5));
    CHECK_THROWS_WITH(SafetensorsFile::read(path), Contains("truncated"));
    spit(path, good.substr(0, 20));  // header cut short
    CHECK_THROWS_WITH(SafetensorsFile::read(path), Contains("header length"));
    std::string bad = good;
    bad[9] = '#';
    spit(path, bad);
    CHECK_THROWS_WITH(SafetensorsFile::read(path), Contains("the header is damaged"));
    bad = good;
    bad[7] = 0x7f;  // absurd header length
    spit(path, bad);
    CHECK_THROWS_WITH(SafetensorsFile::read(path), Contains("header length"));
    CHECK_THROWS_WITH(SafetensorsFile::read(tmp / "missing"), Contains("does not exist"));
  }
  SECTION("hand-made headers that break the rules") {
    const std::string data(16, '\0');
    struct Case {
      std::string header, message;
    };
    const std::vector<Case> cases = {
        {R"([1, 2])", "not a JSON object"},
        {R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [3], "data_offsets": [4, 16]}})",
         "overlaps"},
        {R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [1], "data_offsets": [12, 16]}})",
         "gap of 4 bytes"},
        {R"({"a": {"dtype": "F32", "shape": [5], "data_offsets": [0, 20]}})", "truncated"},
        {R"({"a": {"dtype": "F32", "shape": [3], "data_offsets": [0, 16]}})", "needs 12"},
        {R"({"a": {"dtype": "F32", "shape": [-4], "data_offsets": [0, 16]}})", "non-negative"},
        {R"({"a": {"dtype": "Q4", "shape": [4], "data_offsets": [0, 16]}})", "unknown dtype 'Q4'"},
        {R"({"a": {"dtype": "F32", "shape": [4], "data_offsets": [16, 0]}})", "begin > end"},
        {R"({"a": {"dtype": "F32", "shape": [4]}})", "data_offsets"},
        {R"({"__metadata__": {"k": 1}, "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})", "not a string"},
    };
    for (const Case& c : cases) {
      INFO(c.header);
      spit(path, raw_safetensors(c.header, data));
      CHECK_THROWS_WITH(SafetensorsFile::read(path), Contains(c.message));
    }
    // The same data with a valid (unpadded) header is accepted: the rules above are the only reason.
    spit(path, raw_safetensors(R"({"a": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}})", data));
    CHECK(SafetensorsFile::read(path).shape("a") == std::vector<int64_t>{2, 2});
  }
}

namespace {
struct FakeModel {
  std::vector<float> params;  // one flat buffer: "tok_emb" (4, 3) then "head" (3, 2)
  std::vector<float> m, v;
  explicit FakeModel(float base) : params(18), m(18), v(18) {
    for (int i = 0; i < 18; ++i) params[i] = base + 0.5f * i, m[i] = -base * i, v[i] = base / (i + 1);
  }
  std::vector<CheckpointFile> files() const {
    return {{"model.safetensors",
             {{"tok_emb", "F32", {4, 3}, params.data(), 48}, {"head", "F32", {3, 2}, params.data() + 12, 24}}},
            {"optimizer.safetensors", {{"m", "F32", {18}, m.data(), 72}, {"v", "F32", {18}, v.data(), 72}}}};
  }
};
}  // namespace

TEST_CASE("checkpoint save/load round trip", "[checkpoint]") {
  TempDir tmp;
  const std::string dir = tmp / "run/ckpt";  // created by save_checkpoint
  const FakeModel model(1.0f);
  const nlohmann::json meta = {{"config", {{"n_layer", 2}, {"seed", 1337}}}, {"loss", 2.5}};
  const std::string step_path = save_checkpoint(dir, 40, model.files(), meta);
  CHECK(step_path == dir + "/step_000040");
  CHECK(slurp(dir + "/latest") == "step_000040\n");
  std::set<std::string> entries;  // no scratch left behind
  for (const auto& e : fs::directory_iterator(dir)) entries.insert(e.path().filename().string());
  CHECK(entries == std::set<std::string>{"latest", "step_000040"});

  for (const std::string& target : {dir, step_path}) {  // the checkpoint dir or the step dir
    INFO(target);
    const LoadedCheckpoint ck = load_checkpoint(target);
    CHECK(ck.path == step_path);
    CHECK(ck.meta["format_version"] == 1);
    CHECK(ck.meta["step"] == 40);
    CHECK(ck.meta["config"]["seed"] == 1337);
    CHECK(ck.meta["loss"] == 2.5);
    for (const char* name : {"model.safetensors", "optimizer.safetensors"}) {
      CHECK(ck.meta["files"][name]["sha256"] == sha256_hex_of_file(step_path + "/" + name));
      CHECK(ck.meta["files"][name]["bytes"] == fs::file_size(step_path + "/" + name));
    }
    REQUIRE(ck.files.size() == 2);
    const SafetensorsFile& mf = ck.files.at("model.safetensors");
    CHECK(mf.names() == std::vector<std::string>{"tok_emb", "head"});
    CHECK(mf.metadata().at("step") == "40");
    std::vector<float> params(18), m(18);
    mf.copy_to("tok_emb", "F32", params.data(), 48);
    mf.copy_to("head", "F32", params.data() + 12, 24);
    ck.files.at("optimizer.safetensors").copy_to("m", "F32", m.data(), 72);
    CHECK(params == model.params);
    CHECK(m == model.m);
  }

  SECTION("the model file's data section is the flat parameter buffer") {
    const std::string file = slurp(step_path + "/model.safetensors");
    CHECK(file.substr(8 + header_len(file)) == std::string(reinterpret_cast<const char*>(model.params.data()), 72));
  }
  SECTION("meta keys that collide with the protocol's are replaced, so a loaded meta can be saved again") {
    const LoadedCheckpoint ck = load_checkpoint(dir);
    save_checkpoint(dir, 41, model.files(), ck.meta);
    const LoadedCheckpoint again = load_checkpoint(dir);
    CHECK(again.meta["step"] == 41);
    CHECK(again.meta["config"] == meta["config"]);
  }
  SECTION("bad arguments") {
    CHECK_THROWS_WITH(save_checkpoint(dir, -1, model.files(), meta), Contains("step must be >= 0"));
    CHECK_THROWS_WITH(save_checkpoint(dir, 1, model.files(), nlohmann::json::array()), Contains("JSON object"));
    CHECK_THROWS_WITH(save_checkpoint(dir, 1, {{"../evil", {}}}, meta), Contains("not a valid checkpoint file name"));
    CHECK_THROWS_WITH(save_checkpoint(dir, 1, {{"meta.json", {}}}, meta), Contains("not a valid checkpoint file name"));
    CHECK(slurp(dir + "/latest") == "step_000040\n");
  }
  SECTION("a failed save leaves no step directory and keeps latest") {
    float x[2] = {};
    CHECK_THROWS_WITH(save_checkpoint(dir, 50, {{"model.safetensors", {{"x", "F32", {3}, x, 8}}}}, meta),
                      Contains("needs 12"));
    CHECK_FALSE(fs::exists(dir + "/step_000050"));
    CHECK_FALSE(fs::exists(dir + "/step_000050.tmp"));
    CHECK(load_checkpoint(dir).meta["step"] == 40);
  }
}

TEST_CASE("checkpoint latest points to the newest save", "[checkpoint]") {
  TempDir tmp;
  const std::string dir = tmp / "ckpt";
  save_checkpoint(dir, 10, FakeModel(1.0f).files(), {});
  save_checkpoint(dir, 20, FakeModel(2.0f).files(), {});
  CHECK(slurp(dir + "/latest") == "step_000020\n");
  CHECK(fs::is_directory(dir + "/step_000010"));
  LoadedCheckpoint ck = load_checkpoint(dir);
  CHECK(ck.path == dir + "/step_000020");
  CHECK(ck.meta["step"] == 20);
  CHECK(load_checkpoint(dir + "/step_000010").meta["step"] == 10);

  SECTION("saving the same step again replaces it whole") {
    const FakeModel newer(3.0f);
    save_checkpoint(dir, 20, newer.files(), {{"again", true}});
    ck = load_checkpoint(dir);
    CHECK(ck.meta["again"] == true);
    std::vector<float> params(18);
    ck.files.at("model.safetensors").copy_to("tok_emb", "F32", params.data(), 48);
    CHECK(params[0] == 3.0f);
    for (const auto& e : fs::directory_iterator(dir))
      CHECK((e.path().extension() != ".tmp" && e.path().extension() != ".old"));
  }
}

TEST_CASE("checkpoint load detects damaged files", "[checkpoint]") {
  TempDir tmp;
  const std::string dir = tmp / "ckpt";
  const std::string step = save_checkpoint(dir, 40, FakeModel(1.0f).files(), {});
  const std::string model = step + "/model.safetensors";
  std::string bytes = slurp(model);

  SECTION("one flipped byte in the data") {
    bytes.back() ^= 0x01;
    spit(model, bytes);
    CHECK_THROWS_WITH(load_checkpoint(dir),
                      "checkpoint " + model + ": checksum mismatch (file corrupted or truncated)");
  }
  SECTION("truncated") {
    fs::resize_file(model, bytes.size() - 1);
    CHECK_THROWS_WITH(load_checkpoint(dir), Contains(model) &&
                                                Contains("meta.json says " + std::to_string(bytes.size())) &&
                                                Contains("truncated"));
  }
  SECTION("meta.json is not JSON, or from a future format") {
    spit(step + "/meta.json", "{\"format_version\": 1, ");
    CHECK_THROWS_WITH(load_checkpoint(dir), Contains(step + "/meta.json is damaged"));
    spit(step + "/meta.json", R"({"format_version": 2, "step": 40, "files": {}})");
    CHECK_THROWS_WITH(load_checkpoint(dir), Contains("format_version 2 is not supported"));
  }
  SECTION("a file or meta.json missing") {
    fs::remove(model);
    CHECK_THROWS_WITH(load_checkpoint(dir), Contains(model) && Contains("missing (listed in meta.json)"));
    fs::remove(step + "/meta.json");
    CHECK_THROWS_WITH(load_checkpoint(dir), Contains(step) && Contains("missing meta.json"));
    CHECK_THROWS_WITH(load_checkpoint(step), Contains("no meta.json") && Contains("no latest"));
  }
}

TEST_CASE("checkpoint load gives clear errors for missing pieces", "[checkpoint]") {
  TempDir tmp;
  const std::string dir = tmp / "ckpt";
  CHECK_THROWS_WITH(load_checkpoint(dir), "checkpoint " + dir + ": no such directory");
  fs::create_directories(dir);
  CHECK_THROWS_WITH(load_checkpoint(dir), Contains("no latest file"));
  spit(dir + "/latest", "step_000007\n");
  CHECK_THROWS_WITH(load_checkpoint(dir), Contains("names step_000007") && Contains("does not exist"));
  spit(dir + "/latest", "../../etc\n");
  CHECK_THROWS_WITH(load_checkpoint(dir), Contains("does not name a step directory"));
  spit(dir + "/file", "x");
  CHECK_THROWS_WITH(load_checkpoint(dir + "/file"), Contains("not a directory"));
}

TEST_CASE("checkpoint leftovers of an interrupted save do not break loading", "[checkpoint]") {
  TempDir tmp;
  const std::string dir = tmp / "ckpt";
  save_checkpoint(dir, 8, FakeModel(1.0f).files(), {});
  // A crash while saving step 9: half a scratch directory and a latest scratch file never renamed;
  // beside them, look-alikes a person made, which are not shardlab's to touch.
  fs::create_directories(dir + "/step_000009.tmp-aB3dE9");
  spit(dir + "/step_000009.tmp-aB3dE9/model.safetensors", "half a fi");
  spit(dir + "/latest.tmp-Zz0Yy1", "step_000009\n");
  fs::create_directories(dir + "/step_000009.tmp");
  spit(dir + "/step_000009.tmp/notes.txt", "mine");
  fs::create_directories(dir + "/step_000009.tmp-cC4fF0");
  spit(dir + "/step_000009.tmp-cC4fF0/notes.txt", "mine too");  // a scratch name, but not a save's files
  spit(dir + "/latest.tmp", "mine");

  LoadedCheckpoint ck = load_checkpoint(dir);
  CHECK(ck.path == dir + "/step_000008");
  CHECK(ck.meta["step"] == 8);

  // The next save of step 9 clears its own leftovers, moves latest forward, and leaves the rest.
  save_checkpoint(dir, 9, FakeModel(2.0f).files(), {});
  CHECK(load_checkpoint(dir).meta["step"] == 9);
  CHECK_FALSE(fs::exists(dir + "/step_000009.tmp-aB3dE9"));
  CHECK_FALSE(fs::exists(dir + "/latest.tmp-Zz0Yy1"));
  CHECK(slurp(dir + "/step_000009.tmp/notes.txt") == "mine");
  CHECK(slurp(dir + "/step_000009.tmp-cC4fF0/notes.txt") == "mine too");
  CHECK(slurp(dir + "/latest.tmp") == "mine");
}
