# SPDX-License-Identifier: MIT
# docs/img/flows.png (docs/guide.md): gnuplot docs/img/flows.gp from docs/img/
set terminal pngcairo size 1200,660 font ',11'
set output 'flows.png'
unset border; unset tics; unset key
set xrange [0:120]; set yrange [0:70]
set title "npukit's four flows: what goes in (top), the npu commands (boxes), what comes out" font ',13'
set style rect fc rgb '#dbe6f4' fs solid 1.0 border rgb '#4c72b0'
set style arrow 1 head filled size 1.2,20 lw 1.5 lc rgb '#333333'
set style arrow 2 nohead lw 1.5 lc rgb '#333333'
# flow names
set label 31 "1. ONNX models" at 15,66 center font ',12'
set label 32 "2. e1 modules" at 45,66 center font ',12'
set label 33 "3. LLMs" at 75,66 center font ',12'
set label 34 "4. outside drivers" at 103,66 center font ',12'
# inputs
set label 1 "model.onnx" at 15,60 center
set label 2 "module (JSON / YAML)" at 45,60 center
set label 3 "llama2.c checkpoint + tokenizer" at 75,60 center
set label 4 "a driver, a script, QEMU's clients" at 103,60 center
# first row of commands
set object 1 rect from 6,44 to 26,54
set label 11 "npu run --device D\n(partition, plan, run)" at 16,49 center front font ',10'
set object 2 rect from 36,44 to 56,54
set label 12 "npu lower --device e1\n(run the module now)" at 46,49 center front font ',10'
set object 3 rect from 64,44 to 86,54
set label 13 "npu llm --device pccx|cpu\n(decode)" at 75,49 center front font ',10'
set object 4 rect from 92,44 to 114,54
set label 14 "npu qtest --device D\n(serve its registers)" at 103,49 center front font ',10'
# what they give
set label 21 "outputs, classes; --report,\n--report-json, --trace, --plot" at 16,39 center font ',9'
set label 22 "JSON outputs + golden;\n--report, --trace, --plot" at 46,39 center font ',9'
set label 23 "text; tokens/s in --report;\n--trace, --plot (pccx)" at 75,39 center font ',9'
set label 24 "qtest replies, IRQ lines;\n--trace, --log" at 103,39 center font ',9'
# second row
set object 5 rect from 6,22 to 26,32
set label 15 "npu compile\n--device v0|shell" at 16,27 center front font ',10'
set object 6 rect from 36,22 to 56,32
set label 16 "npu compile\n--device e1" at 46,27 center front font ',10'
set object 7 rect from 64,22 to 86,32
set label 17 "npu llm-synth\n(random weights,\nreal shapes)" at 75,27 center front font ',10'
set object 8 rect from 92,22 to 114,32
set label 18 "npu-qemu or qemu-system-npu\n(npu qtest, QEMU's\ncommand line)" at 103,27 center front font ',10'
# replay
set object 9 rect from 12,3 to 50,14.5 fc rgb '#f4e3db' fs solid 1.0 border rgb '#d62728'
set label 19 "npu exec MODEL.npkb | PACKAGE.json\n(replays the compiled stream: the outputs\nand cycles of npu run / npu lower)" at 31,8.5 center front font ',10'
set label 20 "MODEL.npkb" at 14,17 right font ',9'
set label 25 "PACKAGE.json" at 48,17 left font ',9'
# arrows: inputs to the first row
set arrow from 16,58 to 16,54 as 1
set arrow from 46,58 to 46,54 as 1
set arrow from 75,58 to 75,54 as 1
set arrow from 103,58 to 103,54 as 1
# inputs to compile, around the first row on the left
set arrow from 9,58.5 to 3,58.5 as 2
set arrow from 3,58.5 to 3,27 as 2
set arrow from 3,27 to 6,27 as 1
set arrow from 39,58.5 to 33,58.5 as 2
set arrow from 33,58.5 to 33,27 as 2
set arrow from 33,27 to 36,27 as 1
# compile to exec
set arrow from 16,22 to 24,13 as 1
set arrow from 46,22 to 38,13 as 1
# llm-synth's checkpoint feeds npu llm (on the right of both boxes)
set arrow from 86,27 to 89,27 as 2
set arrow from 89,27 to 89,49 as 2
set arrow from 89,49 to 86,49 as 1
set label 26 "its\n.bin" at 89.5,38 left font ',8'
set label 29 "around them: asm, disasm, shell-map, shell-run (command streams); sweep, bench (studies); devices, demo" at 60,1 center font ',9'
plot NaN notitle
