#pragma once
// A loaded Program's kernel operands against each call's kind and shape: how many input and
// output slots it names (operand order as in sim/kernel_call.hpp and validate/run/
// kernel_operands.hpp) and that each slot's shape fits the call (a GEMM's [m, k] x [k, n], an
// attention operand's [batch, tokens, heads, head_dim], ...). A Program written by
// --save-program passes; a hand-edited one fails here with an InputError naming the op and the
// slot, instead of at run time.
#include <string_view>

#include "sim/program.hpp"

namespace meshsim {

// Calls without any operand (cost-only Programs) and slots that do not exist (validate_program
// reports those) are left alone.
// Messages start with `origin` (the file name): "p.json: ops[12] 'fwd gemm': gemm expects ...".
void check_kernel_operands(const Program& program, std::string_view origin);

}  // namespace meshsim
