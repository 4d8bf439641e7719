#include "engine/kernels/matmul_precision.h"

#include <asm/prctl.h>
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "engine/core/error.h"

namespace vg {
namespace {

std::atomic<MatmulPrecision> g_precision{MatmulPrecision::fp32};

// The stand-in VITGRAD_BF16_UNITS names, if any.
Bf16StandIn stand_in_from_environment() {
  const char* units = std::getenv("VITGRAD_BF16_UNITS");
  if (units && std::strcmp(units, "model") == 0) return Bf16StandIn::model;
  if (units && std::strcmp(units, "fma") == 0) return Bf16StandIn::fma;
  return Bf16StandIn::none;
}
std::atomic<Bf16StandIn> g_stand_in{stand_in_from_environment()};

// XCR0: the register states the operating system saves on a context switch.
uint64_t xcr0() {
  uint32_t eax = 0, edx = 0;
  __asm__ volatile("xgetbv" : "=a"(eax), "=d"(edx) : "c"(0));
  return uint64_t(edx) << 32 | eax;
}

// CPUID feature bits, spelled out because not every compiler's <cpuid.h> names them (clang
// 14's lacks the AMX ones): leaf 7 subleaf 1 EAX, and leaf 7 subleaf 0 EDX.
constexpr unsigned kAvx512Bf16Bit = 1u << 5;
constexpr unsigned kAmxBf16Bit = 1u << 22;
constexpr unsigned kAmxTileBit = 1u << 24;

bool has_avx512_bf16() {
  unsigned eax, ebx, ecx, edx;
  if (!__builtin_cpu_supports("avx512f")) return false;  // includes the OS's zmm state
  if (!__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx)) return false;
  return (eax & kAvx512Bf16Bit) != 0;
}

// AMX needs the CPU's tile units, the OS saving tile state (XCR0 bits 17 and 18), and, on
// Linux, the process's request for the tile data state before the first tile instruction.
bool has_amx_bf16() {
  unsigned eax, ebx, ecx, edx;
  if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
  if (!(edx & kAmxBf16Bit) || !(edx & kAmxTileBit)) return false;
  if ((xcr0() & (3u << 17)) != (3u << 17)) return false;
  constexpr unsigned long kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, ARCH_REQ_XCOMP_PERM, kXfeatureXtiledata) == 0;
}

}  // namespace

Bf16Hardware bf16_hardware() {
  static const Bf16Hardware found = [] {
    // AMX is used only alongside AVX512-BF16 (every AMX CPU has it): the kernels convert and
    // pack operands with AVX-512 either way.
    if (!has_avx512_bf16()) return Bf16Hardware::none;
    // VITGRAD_BF16_UNITS=avx512_bf16 leaves AMX unused, =none acts as a CPU without bf16 units
    // (=model and =fma leave the units as they are: the stand-ins then run the products).
    const char* limit = std::getenv("VITGRAD_BF16_UNITS");
    if (limit && std::strcmp(limit, "none") == 0) return Bf16Hardware::none;
    if (limit && std::strcmp(limit, "avx512_bf16") == 0) return Bf16Hardware::avx512_bf16;
    return has_amx_bf16() ? Bf16Hardware::amx : Bf16Hardware::avx512_bf16;
  }();
  return found;
}

const char* bf16_hardware_name(Bf16Hardware hardware) {
  switch (hardware) {
    case Bf16Hardware::amx:
      return "AMX-BF16";
    case Bf16Hardware::avx512_bf16:
      return "AVX512-BF16";
    case Bf16Hardware::none:
      break;
  }
  return "none";
}

MatmulPrecision matmul_precision() {
  return g_precision.load(std::memory_order_relaxed);
}

void use_bf16_stand_in(Bf16StandIn stand_in) {
  g_stand_in.store(stand_in, std::memory_order_relaxed);
}

Bf16StandIn bf16_stand_in() {
  return g_stand_in.load(std::memory_order_relaxed);
}

const char* bf16_units_in_use() {
  switch (bf16_stand_in()) {
    case Bf16StandIn::model:
      return "model";
    case Bf16StandIn::fma:
      return "fma";
    case Bf16StandIn::none:
      break;
  }
  return bf16_hardware_name(bf16_hardware());
}

void check_matmul_precision_supported(MatmulPrecision precision) {
  if (precision != MatmulPrecision::bf16) return;
  const Bf16StandIn stand_in = bf16_stand_in();
  check(stand_in != Bf16StandIn::fma ||
            (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")),
        "bf16 matrix products on float fmas (VITGRAD_BF16_UNITS=fma): this CPU has no AVX2 "
        "and FMA");
  check(bf16_hardware() != Bf16Hardware::none || stand_in != Bf16StandIn::none,
        "bf16 matrix products: this CPU has neither AVX512-BF16 nor AMX-BF16 "
        "(/proc/cpuinfo flags avx512_bf16, amx_bf16); use fp32");
}

void set_matmul_precision(MatmulPrecision precision) {
  check_matmul_precision_supported(precision);
  g_precision.store(precision, std::memory_order_relaxed);
}

const char* matmul_precision_name(MatmulPrecision precision) {
  return precision == MatmulPrecision::bf16 ? "bf16" : "fp32";
}

}  // namespace vg
