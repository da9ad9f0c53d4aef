# tpc_add_dialect_doc(<td file> <output name> <dialect>)
# Generates ${TPC_DOCS_DIR}/dialects/<output name>.md from ODS with
# mlir-tblgen as part of the default build. test/docs checks that the copy
# committed under docs/dialects/ matches it.
add_custom_target(tpc-docs ALL)
function(tpc_add_dialect_doc td_file out_name dialect)
  set(out ${TPC_DOCS_DIR}/dialects/${out_name}.md)
  get_filename_component(td_abs ${td_file} ABSOLUTE)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${TPC_DOCS_DIR}/dialects
    COMMAND ${MLIR_TABLEGEN_EXE} -gen-dialect-doc -dialect=${dialect}
            -I ${PROJECT_SOURCE_DIR} -I ${MLIR_INCLUDE_DIRS}
            ${td_abs} -o ${out}
    DEPENDS ${td_abs} ${MLIR_TABLEGEN_EXE}
    COMMENT "Generating dialect reference ${out_name}.md")
  add_custom_target(${out_name}Doc DEPENDS ${out})
  add_dependencies(tpc-docs ${out_name}Doc)
endfunction()
