//===- executable_fuzzer.cpp - libFuzzer target: the .tpcx loader ---------===//
//
// Loads the input as a .tpcx file image with loadExecutableFromBytes (the
// frame, the checksum, the FlatBuffers verifier, checkExecutable and its
// last gate decodeProgram), then does what tpc-run does with an accepted
// executable before it allocates anything: decodes the program, places it
// on ranks of its mesh (placeProgram) and asks the placed program what the
// interpreter asks (the kernels computing each output, the stage's runs).
//
// Almost every mutation of a file breaks its CRC-64, which would stop the
// loader at the checksum. So an input that starts with the magic is also
// loaded a second time with its header's payload length and checksum
// recomputed: the mutations then reach the verifier and every check behind
// it. Byte mutations of a FlatBuffer rarely make a well-formed executable
// that means something else, so half the mutations are structural (the
// custom mutator below): the payload is unpacked with the object API, one
// number, string, or list element is changed, added, removed or swapped,
// and the result is packed and framed again.
//
// A refused file must come back as an error Status; anything else is a bug
// in the loader (src/Executable.cpp, src/Program.cpp and the decoders). See
// test/fuzz/README.md.
//
//===----------------------------------------------------------------------===//

#include "tpcrt/Executable.h"
#include "tpcrt/ExecutableDType.h"
#include "tpcrt/Program.h"
#include "tpcrt/Shape.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

using namespace tpcrt;

extern "C" size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t maxSize);

namespace {

/// What the interpreter and tpc-run ask of a placed program before a step:
/// the inputs' global shapes, the kernels computing each output (the loss
/// runs), the stage's runs and the buffers' live intervals.
void query(const Program &program) {
  for (const BindingRef &input : program.inputs) {
    (void)program.globalShapeOf(input);
    (void)program.microbatchesOf(input);
    (void)program.ownsBuffer(input.buffer);
  }
  for (const BindingRef &output : program.outputs) {
    (void)program.runsComputing(output.buffer);
    (void)program.kernelsComputing(output.buffer);
  }
  (void)program.stageRuns(program.stage);
  if (program.numInstances) {
    (void)program.intervalsOf(0);
    (void)program.intervalsOf(program.numInstances - 1);
  }
}

void load(const uint8_t *data, size_t size) {
  LoadedExecutable loaded;
  Status status = loadExecutableFromBytes("fuzz.tpcx", data, size, loaded);
  if (!status) {
    if (!loaded.empty() || status.message().empty())
      std::abort();
    return;
  }
  const fb::Executable &exe = loaded.executable();
  Program program;
  // checkExecutable already decoded it once: it must decode again.
  if (!decodeProgram(exe, program))
    std::abort();
  int64_t world = program.mesh.worldSize();
  // The first ranks and the last (a mesh may be large): each placement
  // starts from a fresh decode, as each rank's tpc-run does.
  std::vector<int64_t> ranks;
  for (int64_t r = 0; r < std::min<int64_t>(world, 4); ++r)
    ranks.push_back(r);
  if (world > 4)
    ranks.push_back(world - 1);
  for (int64_t rank : ranks) {
    Program placed;
    if (!decodeProgram(exe, placed))
      std::abort();
    if (placeProgram(placed, rank))
      query(placed);
  }
  // A rank outside the mesh is refused.
  if (placeProgram(program, world))
    std::abort();
}

//===----------------------------------------------------------------------===//
// The structural mutator
//===----------------------------------------------------------------------===//

/// Every number, string and list of an unpacked executable, as accessors.
struct Fields {
  struct Number {
    std::function<int64_t()> get;
    std::function<void(int64_t)> set;
  };
  struct Real {
    double *value;
  };
  struct List {
    std::function<size_t()> size;
    std::function<void(size_t)> erase;
    std::function<void(size_t)> duplicate; // inserts a copy after i
    std::function<void(size_t, size_t)> swap;
  };
  std::vector<Number> numbers;
  std::vector<Real> reals;
  std::vector<std::string *> strings;
  std::vector<List> lists;

  template <typename T> void number(T &v) {
    using U = std::conditional_t<std::is_enum<T>::value,
                                 std::underlying_type<T>, std::common_type<T>>;
    using Raw = typename U::type;
    numbers.push_back(
        {[&v] { return static_cast<int64_t>(static_cast<Raw>(v)); },
         [&v](int64_t x) { v = static_cast<T>(static_cast<Raw>(x)); }});
  }
  void real(double &v) { reals.push_back({&v}); }
  void string(std::string &s) { strings.push_back(&s); }

  /// A list of scalars: its elements and the list itself.
  template <typename T> void scalars(std::vector<T> &v) {
    for (T &x : v)
      number(x);
    lists.push_back(
        {[&v] { return v.size(); },
         [&v](size_t i) { v.erase(v.begin() + static_cast<ptrdiff_t>(i)); },
         [&v](size_t i) {
           v.insert(v.begin() + static_cast<ptrdiff_t>(i), v[i]);
         },
         [&v](size_t i, size_t j) { std::swap(v[i], v[j]); }});
  }
  /// A list of tables; `each` adds the fields of one.
  template <typename T, typename Each>
  void tables(std::vector<std::unique_ptr<T>> &v, Each each) {
    for (std::unique_ptr<T> &t : v)
      each(*t);
    lists.push_back(
        {[&v] { return v.size(); },
         [&v](size_t i) { v.erase(v.begin() + static_cast<ptrdiff_t>(i)); },
         [&v](size_t i) {
           v.insert(v.begin() + static_cast<ptrdiff_t>(i) + 1,
                    std::make_unique<T>(*v[i]));
         },
         [&v](size_t i, size_t j) { std::swap(v[i], v[j]); }});
  }

  void splits(std::vector<std::unique_ptr<fb::DimSplitT>> &v) {
    tables(v, [&](fb::DimSplitT &s) { scalars(s.axes); });
  }
  void binding(fb::BindingT &b) {
    string(b.name);
    number(b.buffer);
    number(b.value_bound);
    splits(b.splits);
  }

  explicit Fields(fb::ExecutableT &e) {
    number(e.schema_version);
    tables(e.mesh, [&](fb::MeshAxisT &a) {
      string(a.name);
      number(a.size);
    });
    number(e.arena_bytes);
    tables(e.buffers, [&](fb::BufferT &b) {
      number(b.offset);
      number(b.size);
      number(b.dtype);
      scalars(b.shape);
      number(b.pool);
    });
    tables(e.params, [&](fb::ParamT &p) {
      string(p.hf_name);
      scalars(p.hf_shape);
      scalars(p.view_shape);
      number(p.buffer);
      number(p.init);
      real(p.init_std);
      scalars(p.padded_shape);
      splits(p.splits);
    });
    tables(e.inputs, [&](fb::BindingT &b) { binding(b); });
    tables(e.outputs, [&](fb::BindingT &b) { binding(b); });
    tables(e.kernels, [&](fb::KernelT &k) {
      number(k.op);
      scalars(k.operands);
      scalars(k.results);
      scalars(k.int_attrs);
      for (double &f : k.float_attrs)
        real(f);
      lists.push_back({[&k] { return k.float_attrs.size(); },
                       [&k](size_t i) {
                         k.float_attrs.erase(k.float_attrs.begin() +
                                             static_cast<ptrdiff_t>(i));
                       },
                       [&k](size_t i) {
                         k.float_attrs.insert(k.float_attrs.begin() +
                                                  static_cast<ptrdiff_t>(i),
                                              k.float_attrs[i]);
                       },
                       [&k](size_t i, size_t j) {
                         std::swap(k.float_attrs[i], k.float_attrs[j]);
                       }});
      number(k.flags);
      splits(k.splits);
      number(k.stage);
    });
    number(e.planned_peak_bytes);
    number(e.seed);
    tables(e.state, [&](fb::StateT &s) {
      string(s.name);
      number(s.param);
      number(s.buffer);
    });
    tables(e.grads, [&](fb::BindingT &b) { binding(b); });
    scalars(e.stage_planned_peak_bytes);
    tables(e.functions, [&](fb::FunctionT &f) {
      string(f.name);
      number(f.first_kernel);
      number(f.kernel_count);
    });
    tables(e.pools, [&](fb::PoolT &p) {
      number(p.slots);
      number(p.stride);
      number(p.by_microbatch);
    });
    tables(e.stage_actions, [&](fb::StageActionsT &s) {
      // Action is a struct without setters: a field is replaced whole.
      for (fb::Action &a : s.actions) {
        numbers.push_back({[&a] { return int64_t(a.function()); },
                           [&a](int64_t x) {
                             a = fb::Action(uint32_t(x), a.microbatch(),
                                            a.slot());
                           }});
        numbers.push_back({[&a] { return int64_t(a.microbatch()); },
                           [&a](int64_t x) {
                             a = fb::Action(a.function(), uint32_t(x),
                                            a.slot());
                           }});
        numbers.push_back({[&a] { return int64_t(a.slot()); },
                           [&a](int64_t x) {
                             a = fb::Action(a.function(), a.microbatch(),
                                            uint32_t(x));
                           }});
      }
      lists.push_back(
          {[&s] { return s.actions.size(); },
           [&s](size_t i) {
             s.actions.erase(s.actions.begin() + static_cast<ptrdiff_t>(i));
           },
           [&s](size_t i) {
             s.actions.insert(s.actions.begin() + static_cast<ptrdiff_t>(i),
                              s.actions[i]);
           },
           [&s](size_t i, size_t j) {
             std::swap(s.actions[i], s.actions[j]);
           }});
    });
    string(e.hf_config);
  }
};

using Rng = std::mt19937_64;

size_t below(Rng &rng, size_t n) { return n ? rng() % n : 0; }

int64_t interestingNumber(Rng &rng, int64_t old, const Fields &fields) {
  static const int64_t kValues[] = {0,
                                    1,
                                    2,
                                    3,
                                    4,
                                    7,
                                    8,
                                    16,
                                    63,
                                    64,
                                    65,
                                    255,
                                    256,
                                    4096,
                                    65535,
                                    65536,
                                    INT32_MAX,
                                    int64_t(1) << 31,
                                    UINT32_MAX,
                                    int64_t(1) << 32,
                                    int64_t(1) << 53,
                                    int64_t(1) << 62,
                                    INT64_MAX,
                                    -1,
                                    -2,
                                    INT32_MIN,
                                    INT64_MIN,
                                    INT64_MIN + 1};
  switch (below(rng, 7)) {
  case 0:
  case 1:
    return kValues[below(rng, sizeof(kValues) / sizeof(kValues[0]))];
  case 2:
    return int64_t(uint64_t(old) + 1);
  case 3:
    return int64_t(uint64_t(old) - 1);
  case 4:
    return int64_t(uint64_t(old) * 2);
  case 5: // Another field's value: a buffer id, a size, an offset.
    return fields.numbers[below(rng, fields.numbers.size())].get();
  default:
    return int64_t(rng() >> below(rng, 64));
  }
}

double interestingReal(Rng &rng, double old) {
  static const double kValues[] = {0.0,
                                   -0.0,
                                   1.0,
                                   -1.0,
                                   0.5,
                                   2.0,
                                   1e-30,
                                   1e30,
                                   1e300,
                                   std::numeric_limits<double>::infinity(),
                                   -std::numeric_limits<double>::infinity(),
                                   std::numeric_limits<double>::quiet_NaN(),
                                   std::numeric_limits<double>::max(),
                                   std::numeric_limits<double>::denorm_min(),
                                   9007199254740993.0};
  if (below(rng, 3) == 0)
    return old * 2 + 1;
  return kValues[below(rng, sizeof(kValues) / sizeof(kValues[0]))];
}

void mutateString(Rng &rng, std::string &s, const Fields &fields) {
  static const char *kNames[] = {"input_ids", "labels",     "step",     "loss",
                                 "exp_avg",   "exp_avg_sq", "momentum", ""};
  switch (below(rng, 4)) {
  case 0:
    s = kNames[below(rng, sizeof(kNames) / sizeof(kNames[0]))];
    break;
  case 1:
    s = *fields.strings[below(rng, fields.strings.size())];
    break;
  case 2:
    s.resize(below(rng, s.size() + 1));
    break;
  default:
    s.push_back(static_cast<char>(rng()));
    break;
  }
}

/// One structural change; false when the executable offers nothing to change.
bool mutateOnce(Rng &rng, fb::ExecutableT &exe) {
  Fields fields(exe);
  switch (below(rng, 10)) {
  case 0:
  case 1:
  case 2:
  case 3:
  case 4:
    if (fields.numbers.empty())
      return false;
    {
      Fields::Number &n = fields.numbers[below(rng, fields.numbers.size())];
      n.set(interestingNumber(rng, n.get(), fields));
    }
    return true;
  case 5:
    if (fields.reals.empty())
      return false;
    {
      double &r = *fields.reals[below(rng, fields.reals.size())].value;
      r = interestingReal(rng, r);
    }
    return true;
  case 6:
    if (fields.strings.empty())
      return false;
    mutateString(rng, *fields.strings[below(rng, fields.strings.size())],
                 fields);
    return true;
  default: {
    std::vector<Fields::List *> nonEmpty;
    for (Fields::List &l : fields.lists)
      if (l.size())
        nonEmpty.push_back(&l);
    if (nonEmpty.empty())
      return false;
    Fields::List &l = *nonEmpty[below(rng, nonEmpty.size())];
    size_t n = l.size(), i = below(rng, n);
    switch (below(rng, 3)) {
    case 0:
      l.erase(i);
      break;
    case 1:
      if (n < 4096)
        l.duplicate(i);
      break;
    default:
      l.swap(i, below(rng, n));
      break;
    }
    return true;
  }
  }
}

/// Makes every buffer's size agree with its shape and the arena hold every
/// buffer, so that a changed shape or offset gets past those first checks
/// to the ones behind them.
void repair(fb::ExecutableT &exe) {
  for (const std::unique_ptr<fb::BufferT> &b : exe.buffers) {
    int64_t elements = 0;
    uint64_t bytes = 0, end = 0;
    uint64_t elementSize = executableDTypeSize(b->dtype);
    if (elementSize == 0 || !numElementsOf(b->shape, elements) ||
        __builtin_mul_overflow(uint64_t(elements), elementSize, &bytes))
      continue;
    b->size = bytes;
    if (!__builtin_add_overflow(b->offset, bytes, &end))
      exe.arena_bytes = std::max(exe.arena_bytes, end);
  }
  exe.planned_peak_bytes = std::min(exe.planned_peak_bytes, exe.arena_bytes);
}

template <typename T> bool aligned(const flatbuffers::Vector<T> *v) {
  return !v || reinterpret_cast<uintptr_t>(v->Data()) % alignof(T) == 0;
}

/// Whether UnPack may read every 8-byte vector (the loader refuses
/// misaligned ones; the mutator must not read them first).
bool unpackable(const fb::Executable &exe) {
  if (!aligned(exe.stage_planned_peak_bytes()))
    return false;
  if (exe.buffers())
    for (const fb::Buffer *b : *exe.buffers())
      if (!aligned(b->shape()))
        return false;
  if (exe.params())
    for (const fb::Param *p : *exe.params())
      if (!aligned(p->hf_shape()) || !aligned(p->view_shape()) ||
          !aligned(p->padded_shape()))
        return false;
  if (exe.kernels())
    for (const fb::Kernel *k : *exe.kernels())
      if (!aligned(k->int_attrs()) || !aligned(k->float_attrs()))
        return false;
  return true;
}

/// The structural mutation of a .tpcx image; 0 when it is not one whose
/// payload verifies (the caller then mutates bytes).
size_t mutateStructure(uint8_t *data, size_t size, size_t maxSize,
                       unsigned seed) {
  if (size < kExecutableHeaderBytes ||
      std::memcmp(data, kExecutableMagic, sizeof(kExecutableMagic)) != 0)
    return 0;
  // An aligned copy of the payload, as the loader has.
  std::vector<uint8_t> payload(data + kExecutableHeaderBytes, data + size);
  flatbuffers::Verifier verifier(payload.data(), payload.size(),
                                 kMaxVerifierDepth, kMaxVerifierTables);
  if (payload.empty() || !fb::VerifyExecutableBuffer(verifier))
    return 0;
  const fb::Executable *root = fb::GetExecutable(payload.data());
  if (!unpackable(*root))
    return 0;
  fb::ExecutableT exe;
  root->UnPackTo(&exe);
  Rng rng(seed);
  size_t changes = 1 + below(rng, 3);
  bool changed = false;
  for (size_t i = 0; i < changes; ++i)
    changed |= mutateOnce(rng, exe);
  if (!changed)
    return 0;
  if (below(rng, 2) == 0)
    repair(exe);
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::Executable::Pack(builder, &exe),
                 fb::ExecutableIdentifier());
  std::vector<uint8_t> image =
      serializeExecutable(builder.GetBufferPointer(), builder.GetSize());
  if (image.size() > maxSize)
    return 0;
  std::memcpy(data, image.data(), image.size());
  return image.size();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  load(data, size);
  if (size < kExecutableHeaderBytes ||
      std::memcmp(data, kExecutableMagic, sizeof(kExecutableMagic)) != 0)
    return 0;
  std::vector<uint8_t> image(data, data + size);
  uint64_t length = size - kExecutableHeaderBytes;
  uint64_t checksum = crc64(image.data() + kExecutableHeaderBytes, length);
  uint64_t oldLength, oldChecksum;
  std::memcpy(&oldLength, image.data() + 16, 8);
  std::memcpy(&oldChecksum, image.data() + 24, 8);
  if (oldLength == length && oldChecksum == checksum)
    return 0; // Loaded as it is above.
  std::memcpy(image.data() + 16, &length, 8);
  std::memcpy(image.data() + 24, &checksum, 8);
  load(image.data(), image.size());
  return 0;
}

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size,
                                          size_t maxSize, unsigned seed) {
  if (seed % 2 == 0)
    if (size_t n = mutateStructure(data, size, maxSize, seed / 2))
      return n;
  return LLVMFuzzerMutate(data, size, maxSize);
}
