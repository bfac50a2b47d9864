# One tokenizer parity run (cmake -P), driven by tests/parity/tokenizer/CMakeLists.txt:
# generate the strings, make the vocabulary (the Gemma 4 one, or the SentencePiece one derived from
# it), tokenize with llama.cpp and with channel, and compare line by line.
file(MAKE_DIRECTORY ${WORK_DIR})

# run(COMMAND program args... [OUTPUT file]): fails the test if the program fails; OUTPUT receives
# its standard output.
function(run)
  cmake_parse_arguments(PARSE_ARGV 0 arg "" "OUTPUT" "COMMAND")
  set(redirect)
  if(arg_OUTPUT)
    set(redirect OUTPUT_FILE ${arg_OUTPUT})
  endif()
  execute_process(COMMAND ${arg_COMMAND} ${redirect} RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    list(JOIN arg_COMMAND " " command)
    message(FATAL_ERROR "failed (${status}): ${command}")
  endif()
endfunction()

set(lines ${WORK_DIR}/strings.txt)
run(COMMAND ${MAKE_LINES} ${SEED} ${COUNT} ${lines})

if(VOCAB_KIND STREQUAL "spm")
  set(vocab ${WORK_DIR}/vocab-spm.gguf)
  run(COMMAND ${MAKE_SPM_VOCAB} ${GEMMA4_VOCAB} ${vocab})
else()
  set(vocab ${GEMMA4_VOCAB})
endif()

set(flags)
if(NOT PARSE_SPECIAL)
  set(flags --no-parse-special)
endif()
run(COMMAND ${LLAMA_TOKENIZE} ${vocab} ${lines} ${flags} OUTPUT ${WORK_DIR}/ids-llama.txt)
run(COMMAND ${CHANNEL_TOKENIZE} ${vocab} ${lines} ${flags} OUTPUT ${WORK_DIR}/ids-channel.txt)
run(COMMAND ${COMPARE} ${NAME} ${lines} ${WORK_DIR}/ids-llama.txt ${WORK_DIR}/ids-channel.txt)
