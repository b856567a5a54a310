#!/bin/sh
# A stand-in training run for the CI tests: parses --step/--output_dir like a run_<model>
# script and writes tcap_dllogger stdout lines to <output_dir>/train.log.
# MODE (first argument): good | nan | zero_ips | fail | hang | nolog | fifo_log | fifo_console | env
#                        | daemon | noisy | noisy_sdaa_worse
# noisy: train.loss 0.50x, x from the process id (a run-to-run spread under 1%);
# noisy_sdaa_worse: the same, 0.60x with --device sdaa (a device-only bug, 20% worse).
mode=$1; shift
steps=5; out=.; device=cpu
while [ $# -gt 0 ]; do
  case $1 in
    --step) steps=$2; shift 2 ;;
    --output_dir) out=$2; shift 2 ;;
    --device) device=$2; shift 2 ;;
    *) shift ;;
  esac
done
log=$out/train.log
case $mode in
  hang)
    echo $$ > "$out/pids"
    sleep 300 &
    echo $! >> "$out/pids"
    echo "hanging"
    wait
    ;;
  fail) echo "CUDA error: out of memory" >&2; exit 3 ;;
  # Starts a daemon that leaves the group and the session and clears its environment (so it
  # carries no job marker), then trains: its unique argument goes to <output_dir>/daemon.
  daemon)
    arg="1000.$$"
    echo "$arg" > "$out/daemon"
    env -i setsid sleep "$arg" &
    ;;
  nolog) echo "trained, but wrote no log"; exit 0 ;;
  # Leaves a FIFO where the log should be: reading it would block forever.
  fifo_log) mkfifo "$log"; echo "made a FIFO log"; exit 0 ;;
  # Replaces the console log CI reads for its failure message with a FIFO, then fails.
  fifo_console) rm -f "$out/console.log"; mkfifo "$out/console.log"; exit 1 ;;
  # Prints what the command sees of its environment, then trains.
  env)
    echo "PATH=$PATH"
    echo "PYTHONPATH=${PYTHONPATH-}"
    echo "SDAA_HOME=${SDAA_HOME-}"
    echo "python=$(command -v python)"
    ;;
esac
i=0
while [ $i -lt "$steps" ]; do
  loss="0.$((9 - i))1"
  ips="1234.5"
  [ "$mode" = nan ] && [ $i -eq 3 ] && loss=nan
  [ "$mode" = zero_ips ] && ips=0
  case $mode in noisy*) loss="0.5$(($$ % 7))" ;; esac
  [ "$mode" = noisy_sdaa_worse ] && [ "$device" = sdaa ] && loss="0.6$(($$ % 7))"
  echo "TCAPPDLL 2025-05-15 14:20:10.93038$i - Epoch: 0 Iteration: $i  rank : 0  train.loss : $loss  train.ips : $ips imgs/s" >> "$log"
  i=$((i + 1))
done
echo "done $steps steps"
