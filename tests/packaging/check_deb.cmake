# cmake -DBUILD_DIR=<build> -DWORK_DIR=<scratch> -P check_deb.cmake
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

execute_process(COMMAND cpack -G DEB --config "${BUILD_DIR}/CPackConfig.cmake" -B "${WORK_DIR}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "cpack failed (${rc}):\n${out}")
endif()
file(GLOB debs "${WORK_DIR}/*.deb")
list(LENGTH debs count)
if(NOT count EQUAL 1)
    message(FATAL_ERROR "expected one .deb in ${WORK_DIR}, found ${count}: ${debs}")
endif()

execute_process(COMMAND dpkg-deb --contents "${debs}" OUTPUT_VARIABLE contents RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "dpkg-deb --contents failed on ${debs}")
endif()
foreach(path
        ./usr/bin/iris
        ./usr/share/applications/iris.desktop
        ./usr/share/icons/hicolor/scalable/apps/iris.svg
        ./usr/share/metainfo/org.irisagent.Iris.metainfo.xml
        ./usr/share/iris/demo/target.png
        ./usr/share/iris/demo/demonstration.json
        ./usr/share/iris/demo/project/style.css
        ./usr/share/iris/models/catalogue.json
        ./usr/share/iris/models/iris-tiny-cua/iris-tiny-cua-f16.gguf
        ./usr/share/iris/models/iris-tiny-cua/mmproj-iris-tiny-cua-f16.gguf
        ./usr/share/iris/tasks/examples/synthetic-grounding/heldout-000000.json)
    string(FIND "${contents}" " ${path}\n" at)
    if(at EQUAL -1)
        message(FATAL_ERROR "${debs} lacks ${path}; it contains:\n${contents}")
    endif()
endforeach()

execute_process(COMMAND dpkg-deb --field "${debs}" Package Version Depends OUTPUT_VARIABLE fields)
foreach(expected "Package: iris" "Depends: .*libqt6widgets6")
    if(NOT fields MATCHES "${expected}")
        message(FATAL_ERROR "control fields do not match '${expected}':\n${fields}")
    endif()
endforeach()

# The packaged binary must run as installed.
execute_process(COMMAND dpkg-deb --extract "${debs}" "${WORK_DIR}/root" RESULT_VARIABLE rc)
execute_process(COMMAND "${WORK_DIR}/root/usr/bin/iris" --version
                RESULT_VARIABLE rc OUTPUT_VARIABLE version ERROR_VARIABLE version)
if(NOT rc EQUAL 0 OR NOT version MATCHES "^iris [0-9]+\\.[0-9]+\\.[0-9]+\n")
    message(FATAL_ERROR "the packaged iris --version failed (${rc}):\n${version}")
endif()
# The packaged binary finds its bundled demo (share/iris next to bin/) and runs it.
execute_process(COMMAND "${CMAKE_COMMAND}" -E env --unset=IRIS_DATA_DIR QT_QPA_PLATFORM=offscreen
                        QTWEBENGINE_DISABLE_SANDBOX=1
                        "${WORK_DIR}/root/usr/bin/iris" demo --db "${WORK_DIR}/sessions.db"
                        --workdir "${WORK_DIR}/demo"
                RESULT_VARIABLE rc OUTPUT_VARIABLE demo ERROR_VARIABLE demo)
if(NOT rc EQUAL 0 OR NOT demo MATCHES "done after 5 steps, score 1.0000")
    message(FATAL_ERROR "the packaged iris demo failed (${rc}):\n${demo}")
endif()
# The packaged binary finds its model catalogue the same way.
execute_process(COMMAND "${CMAKE_COMMAND}" -E env --unset=IRIS_DATA_DIR
                        "IRIS_MODELS_DIR=${WORK_DIR}/models"
                        "${WORK_DIR}/root/usr/bin/iris" models list --catalogue
                RESULT_VARIABLE rc OUTPUT_VARIABLE catalogue ERROR_VARIABLE catalogue)
if(NOT rc EQUAL 0 OR NOT catalogue MATCHES "ui-tars-1.5-7b")
    message(FATAL_ERROR "the packaged iris models list --catalogue failed (${rc}):\n${catalogue}")
endif()
# And runs its bundled model live on a bundled task, from the installed files.
execute_process(COMMAND "${CMAKE_COMMAND}" -E env --unset=IRIS_DATA_DIR --unset=IRIS_MODELS_DIR
                        QT_QPA_PLATFORM=offscreen QTWEBENGINE_DISABLE_SANDBOX=1
                        "${WORK_DIR}/root/usr/bin/iris" demo --live --threads 2
                        --workdir "${WORK_DIR}/live"
                RESULT_VARIABLE rc OUTPUT_VARIABLE live ERROR_VARIABLE live)
string(FIND "${live}" "Live: iris-tiny-cua (${WORK_DIR}/root/usr/share/iris/models/iris-tiny-cua/"
       installed)
if(NOT rc EQUAL 0 OR installed EQUAL -1 OR NOT live MATCHES "1/1 tasks")
    message(FATAL_ERROR "the packaged iris demo --live failed (${rc}):\n${live}")
endif()
message(STATUS "${debs} is complete:\n${fields}")
