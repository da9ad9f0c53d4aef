# Reference docs generated from ODS by mlir-tblgen as part of the default
# build, under ${TPC_DOCS_DIR}. test/docs checks that the copies committed
# under docs/ match them.
add_custom_target(tpc-docs ALL)

# tpc_add_doc(<td file> <docs subdir> <output name> <tblgen args...>)
function(tpc_add_doc td_file subdir out_name)
  set(out ${TPC_DOCS_DIR}/${subdir}/${out_name}.md)
  get_filename_component(td_abs ${td_file} ABSOLUTE)
  # The .td files it includes from its folder (TpcOps.td includes
  # TpcGradOps.td, DistOps.td DistBase.td): a change to any of them changes
  # the document.
  get_filename_component(td_dir ${td_abs} DIRECTORY)
  file(GLOB td_siblings CONFIGURE_DEPENDS ${td_dir}/*.td)
  # And those generated next to the build of that folder (the rt dialect's
  # RtOpCodes.td, from the kernel table).
  file(GLOB td_generated ${CMAKE_CURRENT_BINARY_DIR}/*.td)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${TPC_DOCS_DIR}/${subdir}
    COMMAND ${MLIR_TABLEGEN_EXE} ${ARGN}
            -I ${PROJECT_SOURCE_DIR} -I ${CMAKE_CURRENT_BINARY_DIR}
            -I ${MLIR_INCLUDE_DIRS}
            ${td_abs} -o ${out}
    DEPENDS ${td_abs} ${td_siblings} ${td_generated} ${MLIR_TABLEGEN_EXE}
    COMMENT "Generating reference ${subdir}/${out_name}.md")
  add_custom_target(${out_name}Doc DEPENDS ${out})
  add_dependencies(tpc-docs ${out_name}Doc)
endfunction()

function(tpc_add_dialect_doc td_file out_name dialect)
  tpc_add_doc(${td_file} dialects ${out_name} -gen-dialect-doc -dialect=${dialect})
endfunction()

function(tpc_add_pass_doc td_file out_name)
  tpc_add_doc(${td_file} passes ${out_name} -gen-pass-doc)
endfunction()
