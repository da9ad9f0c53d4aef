# -*- Python -*-
import os
import shutil

import lit.formats
from lit.llvm import llvm_config

config.name = "tpc"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = ["Inputs", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.tpc_obj_root, "test")

# Captured FileCheck variables do not leak across CHECK-LABELs.
config.environment["FILECHECK_OPTS"] = "-enable-var-scope"

config.substitutions.append(("%tpc_lib_dir", config.tpc_lib_dir))
config.substitutions.append(("%tpc_src_root", config.tpc_src_root))
config.substitutions.append(("%tpc_docs_dir", config.tpc_docs_dir))
# The directory of tpc-compile and tpc-run, for scripts that run both.
config.substitutions.append(("%tpc_bin", config.tpc_tools_dir))

llvm_config.with_system_environment(["HOME", "PATH"])
llvm_config.use_default_substitutions()
llvm_config.add_tool_substitutions(
    ["tpc-opt", "tpc-import", "tpc-compile", "tpc-run", "tpc-plan"], [config.tpc_tools_dir])
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

# Optional components are lit features, so a test that needs one is reported
# as unsupported where it is missing, never as passed.
# flatc (flatbuffers-compiler) turns an executable's payload into JSON, so
# that tests can read what tpc-compile wrote.
if shutil.which("flatc"):
    config.available_features.add("flatc")
# mpiexec (Open MPI) runs tpc-run --ranks N.
if shutil.which("mpiexec"):
    config.available_features.add("mpiexec")
if config.have_cuda:
    config.available_features.add("cuda-toolkit")
