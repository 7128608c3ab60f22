# Rewrites an rpcgen-generated XDR file so that decoding untrusted input is
# safe (docs/robustness.md, findings F1, F2, F5):
#
#  - xdr_bytes, xdr_string and xdr_array become nfsedge_xdr_bytes, ... which
#    check a length against the bytes left in the input before allocating it;
#  - every enum decoder checks the value against the enum's range, so C++
#    code never loads an out-of-range enum;
#  - a filename3 (one name in a directory) is decoded by
#    nfsedge_xdr_filename, which refuses a '/' in it;
#  - the recursive decoders of the READDIR and READDIRPLUS entry lists are
#    renamed away: rpc/xdr_bounded.cc defines iterative ones under the
#    original names.
#
# Usage: cmake -DHEADER=nfs3.h -DSOURCE=nfs3_xdr.c -P bound_decoders.cmake
# (SOURCE is rewritten in place; HEADER gives the enum definitions).

file(READ ${HEADER} header)
file(READ ${SOURCE} source)

get_filename_component(header_name ${HEADER} NAME)
set(include_line "#include \"${header_name}\"\n")
string(FIND "${source}" "${include_line}" at)
if(at EQUAL -1)
  message(FATAL_ERROR "${SOURCE}: no '${include_line}' to anchor the declarations")
endif()
string(REPLACE "${include_line}" "${include_line}#include \"xdr_bounded.h\"\n" source "${source}")

foreach(fn bytes string array)
  string(REGEX REPLACE "([^_a-z])xdr_${fn} \\(" "\\1nfsedge_xdr_${fn} (" source "${source}")
endforeach()

# Enums: "enum NAME {\n\tA = 1,\n ... };"
string(REGEX MATCHALL "enum [A-Za-z0-9_]+ {[^}]*}" enums "${header}")
foreach(def IN LISTS enums)
  string(REGEX MATCH "enum ([A-Za-z0-9_]+)" _ "${def}")
  set(name ${CMAKE_MATCH_1})
  string(REGEX MATCHALL "= -?[0-9]+" values "${def}")
  set(min "")
  set(max "")
  foreach(v IN LISTS values)
    string(REGEX REPLACE "= " "" v "${v}")
    if(min STREQUAL "" OR v LESS min)
      set(min ${v})
    endif()
    if(max STREQUAL "" OR v GREATER max)
      set(max ${v})
    endif()
  endforeach()
  if(min STREQUAL "")
    message(FATAL_ERROR "${HEADER}: enum ${name} has no explicit values")
  endif()
  set(old "xdr_${name} (XDR *xdrs, ${name} *objp)\n{\n\tregister int32_t *buf;\n\n\t if (!xdr_enum (xdrs, (enum_t *) objp))")
  set(new "xdr_${name} (XDR *xdrs, ${name} *objp)\n{\n\tregister int32_t *buf;\n\n\t if (!nfsedge_xdr_enum_range (xdrs, (enum_t *) objp, ${min}, ${max}))")
  string(FIND "${source}" "${old}" found)
  if(found EQUAL -1)
    message(FATAL_ERROR "${SOURCE}: decoder of enum ${name} not in the expected form")
  endif()
  string(REPLACE "${old}" "${new}" source "${source}")
endforeach()

set(old "xdr_filename3 (XDR *xdrs, filename3 *objp)\n{\n\tregister int32_t *buf;\n\n\t if (!nfsedge_xdr_string (xdrs, objp, ~0))")
string(FIND "${source}" "${old}" found)
if(NOT found EQUAL -1)
  string(REPLACE "${old}" "xdr_filename3 (XDR *xdrs, filename3 *objp)\n{\n\tregister int32_t *buf;\n\n\t if (!nfsedge_xdr_filename (xdrs, objp, ~0))" source "${source}")
elseif(header_name STREQUAL "nfs3.h")
  message(FATAL_ERROR "${SOURCE}: decoder of filename3 not in the expected form")
endif()

foreach(list dirlist3 dirlistplus3)
  set(old "\nxdr_${list} (XDR *xdrs")
  string(FIND "${source}" "${old}" found)
  if(NOT found EQUAL -1)
    string(REPLACE "${old}" "\nnfsedge_recursive_xdr_${list} (XDR *xdrs" source "${source}")
  endif()
endforeach()

file(WRITE ${SOURCE} "${source}")
