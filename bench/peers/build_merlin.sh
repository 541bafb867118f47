#!/bin/sh
# Build Merlin (weighted mini-bucket, the anchor of bench/beyond.py) from a fresh machine.
# Benchmark-only: fwcore never depends on it.
#
#   sh bench/peers/build_merlin.sh [DIR]      # DIR, else $MERLIN_SRC, else ./merlin-src
#   MERLIN=DIR/merlin python bench/beyond.py
#
# Clones radum2275/merlin into DIR (or reuses the clone there), installs Boost
# program_options (apt-get, as root when not already installed), and compiles DIR/merlin
# with g++ -O2 (the shipped Makefile builds with -O0 and libc++).
set -eu

src="${1:-${MERLIN_SRC:-merlin-src}}"

if [ ! -d "$src/src" ]; then
    git clone --depth 1 https://github.com/radum2275/merlin "$src"
fi

if ! dpkg -s libboost-program-options-dev >/dev/null 2>&1; then
    apt-get update
    apt-get install -y libboost-program-options-dev
fi

cd "$src"
g++ -O2 -std=c++11 -Iinclude \
    src/bte.cpp src/cte.cpp src/em.cpp src/gibbs.cpp src/graph.cpp src/ijgp.cpp \
    src/jglp.cpp src/lbp.cpp src/main.cpp src/merlin.cpp src/program_options.cpp \
    src/util.cpp src/wmb.cpp \
    -o merlin -lboost_program_options -ldl
echo "built $(pwd)/merlin"
