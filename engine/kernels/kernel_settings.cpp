#include "engine/kernels/kernel_settings.h"

#include <cstdlib>
#include <string>
#include <vector>

#include "engine/core/error.h"

namespace vg {

void check_kernel_settings() {
  struct Setting {
    const char* name;
    std::vector<std::string> values;
  };
  const Setting settings[] = {{"VITGRAD_GEMM", {"blas", "avx2"}},
                              {"VITGRAD_BF16_UNITS", {"avx512_bf16", "none", "fma", "model"}}};
  for (const Setting& setting : settings) {
    const char* value = std::getenv(setting.name);
    if (!value || !*value) continue;
    bool known = false;
    std::string values;
    for (const std::string& v : setting.values) {
      known = known || v == value;
      values += (values.empty() ? "" : ", ") + v;
    }
    check(known, std::string(setting.name) + "=" + value + " is not one of its values: " + values +
                     " (or unset)");
  }
}

}  // namespace vg
