# cmake -DIRIS=<iris> -DOUT=<scratch> -DREFERENCE=<reference_answers.txt> -DMIN_SUCCESS=<n>
#       -P check_slice.cmake
#
# The bundled model's end-to-end slice: `iris demo --live --task all` runs iris-tiny-cua on the 20
# bundled synthetic-grounding tasks (screenshot, vision tower, decoder, sampler, parser,
# coordinate mapping, real input in the browser, the tasks' checkers). Two checks:
#  - each task's first answer equals the PyTorch model's greedy answer on the same screenshot
#    (REFERENCE, written by scripts/training/reference_answers.py): the tokenizer, the tower,
#    M-RoPE, the decoder and the sampler against an independent implementation;
#  - at least MIN_SUCCESS tasks score 1: the parser, the coordinate mapping and the browser input
#    turn the model's answers into the clicks and keys the checkers see.
file(REMOVE_RECURSE "${OUT}")
execute_process(COMMAND "${IRIS}" demo --live --task all --threads 2 --workdir "${OUT}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE live ERROR_VARIABLE errors)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "iris demo --live --task all failed (${rc}):\n${live}\n${errors}")
endif()

file(STRINGS "${REFERENCE}" lines ENCODING UTF-8)
set(checked 0)
set(differences "")
foreach(line IN LISTS lines)
    if(line MATCHES "^#" OR NOT line MATCHES "^([^:]+): (.*)$")
        continue()
    endif()
    set(task "${CMAKE_MATCH_1}")
    set(want "${CMAKE_MATCH_2}")
    math(EXPR checked "${checked} + 1")
    string(FIND "${live}" "\n${task}:\n  step 1: ${want}\n" at)
    if(at EQUAL -1)
        set(got "(no first step)")
        string(FIND "${live}" "\n${task}:\n  step 1: " start)
        if(NOT start EQUAL -1)
            string(LENGTH "\n${task}:\n  step 1: " skip)
            math(EXPR start "${start} + ${skip}")
            string(SUBSTRING "${live}" ${start} -1 rest)
            string(FIND "${rest}" "\n" end)
            string(SUBSTRING "${rest}" 0 ${end} got)
        endif()
        string(APPEND differences "  ${task}: PyTorch ${want}, Iris ${got}\n")
    endif()
endforeach()
if(checked EQUAL 0)
    message(FATAL_ERROR "${REFERENCE} has no answers")
endif()
if(differences)
    message(FATAL_ERROR "first answers that differ from the PyTorch model's:\n${differences}"
                        "\nthe whole run:\n${live}")
endif()

if(NOT live MATCHES "success \\(score 1\\): ([0-9]+)/([0-9]+) scored")
    message(FATAL_ERROR "no success line in:\n${live}")
endif()
if(CMAKE_MATCH_1 LESS MIN_SUCCESS)
    message(FATAL_ERROR "${CMAKE_MATCH_1}/${CMAKE_MATCH_2} tasks scored 1, fewer than the "
                        "${MIN_SUCCESS} measured when the model was shipped:\n${live}")
endif()
message(STATUS "${checked} first answers equal the PyTorch model's; "
               "${CMAKE_MATCH_1}/${CMAKE_MATCH_2} tasks scored 1")
