# Host backend: the reference checker over every operation, dtype, op and layout.
set(MG_HOST_COLL_SRC ${CMAKE_CURRENT_SOURCE_DIR}/test_host_coll.c ${MG_TEST_COMMON}/reference.c)
foreach(n 1 2 3 4 7)
  mg_test(NAME host_coll_threads_${n} EXE test_host_coll SOURCES ${MG_HOST_COLL_SRC}
          ARGS threads ${n} TIMEOUT 300 LABELS host)
endforeach()
foreach(n 2 3 7)
  mg_test(NAME host_coll_procs_${n} EXE test_host_coll ARGS procs ${n} TIMEOUT 300 LABELS host)
endforeach()
mg_test(NAME host_coll_threads_rank_3 EXE test_host_coll ARGS threads-rank 3 TIMEOUT 300 LABELS host)
# With the thresholds of a machine whose process_vm_readv is fast (host_readv.c): copied once
# between processes from 8 KiB, broadcast and all_gather of 3 staged from 128 KiB read.
mg_test(NAME host_coll_procs_3_fast EXE test_host_coll ARGS procs 3 TIMEOUT 300 LABELS host
        ENV MGCOMM_HOST_READV_FAST=1)
# Over 16 MiB, threads and processes.
mg_test(NAME host_coll_big_threads_4 EXE test_host_coll ARGS threads 4 big TIMEOUT 600 LABELS host)
mg_test(NAME host_coll_big_procs_2 EXE test_host_coll ARGS procs 2 big TIMEOUT 600 LABELS host)
# ... and between processes read once (the thresholds of a fast process_vm_readv).
mg_test(NAME host_coll_big_procs_2_fast EXE test_host_coll ARGS procs 2 big TIMEOUT 600
        LABELS host ENV MGCOMM_HOST_READV_FAST=1)
# Tiny staging slots: every message is pipelined through many steps and both buffers.
mg_test(NAME host_coll_small_slots_3 EXE test_host_coll ARGS threads 3 TIMEOUT 600 LABELS host
        ENV MGCOMM_HOST_SLOT_BYTES=4096 MGCOMM_HOST_SMALL_BYTES=64 MGCOMM_HOST_P2P_BYTES=4096
            MGCOMM_HOST_DIRECT_BYTES=1000000000000)
mg_test(NAME host_coll_small_slots_procs_4 EXE test_host_coll ARGS procs 4 TIMEOUT 600 LABELS host
        ENV MGCOMM_HOST_SLOT_BYTES=4096 MGCOMM_HOST_SMALL_BYTES=64 MGCOMM_HOST_P2P_BYTES=4096
            MGCOMM_HOST_DIRECT_BYTES=1000000000000)
# Communicator management.
mg_test(NAME host_comm_threads EXE test_host_comm SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_host_comm.c
        ARGS threads LABELS host)
mg_test(NAME host_comm_procs EXE test_host_comm ARGS procs LABELS host)
# Bad input (contract 2).
mg_test(NAME argcheck SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/test_argcheck.c LABELS host)
# Groups of any size, and a failed one past the operations a group holds inline.
mg_test(NAME group_many SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/group_many.c LABELS host)
# The single-copy path from a low threshold, between threads and between processes.
mg_test(NAME host_coll_direct_threads_3 EXE test_host_coll ARGS threads 3 TIMEOUT 600 LABELS host
        ENV MGCOMM_HOST_DIRECT_BYTES=1024 MGCOMM_HOST_SLOT_BYTES=4096)
mg_test(NAME host_coll_direct_procs_3 EXE test_host_coll ARGS procs 3 TIMEOUT 600 LABELS host
        ENV MGCOMM_HOST_DIRECT_BYTES=1024 MGCOMM_HOST_SLOT_BYTES=4096
            MGCOMM_HOST_READV_MAX_BYTES=0)
# Between processes, a direct broadcast that would read MGCOMM_HOST_READV_MAX_BYTES (where
# process_vm_readv is slow 1 MiB, or 256 KiB with more ranks than CPUs) or more per rank takes the
# staged pipeline (tests/unit/host_readv_bound.c); threads stay direct.
mg_test(NAME host_readv_bound_procs_staged EXE host_readv_bound
        SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_readv_bound.c ARGS procs 1048576 staged LABELS host
        ENV MGCOMM_HOST_READV_FAST=0)
mg_test(NAME host_readv_bound_procs_direct EXE host_readv_bound ARGS procs 65536 direct
        LABELS host ENV MGCOMM_HOST_DIRECT_BYTES=4096)
mg_test(NAME host_readv_bound_procs_unbounded EXE host_readv_bound ARGS procs 1048576 direct
        LABELS host ENV MGCOMM_HOST_READV_MAX_BYTES=0)
mg_test(NAME host_readv_bound_threads EXE host_readv_bound ARGS threads 1048576 direct LABELS host)
# The default direct threshold: 2 KiB among threads with a CPU each, 32 KiB with up to 2 to each
# of several CPUs, 256 KiB on one CPU (between processes 8 KiB where process_vm_readv is fast, 32
# KiB where it is slow and every rank may have a CPU: 6 KiB stays staged either way).
mg_test(NAME host_direct_threads_small EXE host_readv_bound ARGS threads 4096 direct LABELS host)
mg_test(NAME host_direct_threads_1cpu EXE host_readv_bound ARGS threads-1cpu 8192 staged
        LABELS host)
mg_test(NAME host_direct_threads_1cpu_32k EXE host_readv_bound ARGS threads-1cpu 32768 staged
        LABELS host)
mg_test(NAME host_direct_threads_2cpu_4 EXE host_readv_bound ARGS threads-2cpu 32768 direct 4
        scatter LABELS host)
mg_test(NAME host_direct_threads_2cpu_3 EXE host_readv_bound ARGS threads-2cpu 65536 direct 3
        reduce LABELS host)
mg_test(NAME host_direct_threads_2cpu_24k EXE host_readv_bound ARGS threads-2cpu 24576 staged 4
        LABELS host)
mg_test(NAME host_direct_procs_small EXE host_readv_bound ARGS procs 6144 staged LABELS host)
mg_test(NAME host_readv_fast_procs_8k EXE host_readv_bound ARGS procs 8192 direct 2 gather
        LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_readv_slow_procs_16k EXE host_readv_bound ARGS procs 16384 staged 2 gather
        LABELS host ENV MGCOMM_HOST_READV_FAST=0)
# Where process_vm_readv is slow, scatter and all_to_all take the staged pipeline too; where it
# is fast (host_readv.c) they stay direct.
mg_test(NAME host_readv_slow_procs_scatter EXE host_readv_bound ARGS procs 1048576 staged 2 scatter
        LABELS host ENV MGCOMM_HOST_READV_FAST=0)
# ... but below 1 MiB read they copy once, from 32 KiB, while every rank may have a CPU of the
# machine; with more ranks than CPUs they stay staged (the other side skips).
mg_test(NAME host_readv_slow_procs_window EXE host_readv_bound ARGS procs 65536 direct
        LABELS host ENV MGCOMM_HOST_READV_FAST=0)
mg_test(NAME host_readv_slow_procs_window_scatter EXE host_readv_bound
        ARGS procs 262144 direct 2 scatter LABELS host ENV MGCOMM_HOST_READV_FAST=0)
mg_test(NAME host_readv_slow_procs_crowded EXE host_readv_bound ARGS procs 65536 staged 4
        LABELS host ENV MGCOMM_HOST_READV_FAST=0)
# all_to_allv between processes lends its pieces from the same threshold, slow or fast, and not
# below it.
mg_test(NAME host_a2av_lent_procs_slow EXE host_readv_bound ARGS procs 65536 direct 2 all_to_allv
        LABELS host ENV MGCOMM_HOST_READV_FAST=0)
mg_test(NAME host_a2av_lent_procs_fast EXE host_readv_bound ARGS procs 65536 direct 3 all_to_allv
        LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_a2av_staged_procs_small EXE host_readv_bound ARGS procs 8192 staged 2
        all_to_allv LABELS host)
mg_test(NAME host_a2av_lent_threads EXE host_readv_bound ARGS threads 8192 direct 2 all_to_allv
        LABELS host)
# A reduce among threads past MGCOMM_HOST_SMALL_BYTES (16 KiB) reduces each slice straight from
# the send buffers into the root's receive buffer (3 ranks: slices of unequal size); at that size
# and under it it goes through the slots, and so between processes, but for those of 2 ranks
# where process_vm_readv is fast below 512 KiB, whose root reads the other's input and reduces
# it (in place too; 3 processes with the bound lifted and 4 KiB slots: many pieces, the last
# short).
mg_test(NAME host_reduce_direct_threads EXE host_readv_bound ARGS threads 65536 direct 2 reduce
        LABELS host)
mg_test(NAME host_reduce_direct_threads_3 EXE host_readv_bound ARGS threads 65536 direct 3 reduce
        LABELS host ENV MGCOMM_HOST_DIRECT_BYTES=4096)
mg_test(NAME host_reduce_staged_threads_small EXE host_readv_bound ARGS threads 16384 staged 2
        reduce LABELS host)
mg_test(NAME host_reduce_staged_procs EXE host_readv_bound ARGS procs 1048576 staged 2 reduce
        LABELS host)
mg_test(NAME host_reduce_root_reads EXE host_readv_bound ARGS procs 65536 direct 2 reduce
        LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_reduce_root_reads_in_place EXE host_readv_bound
        ARGS procs 262144 direct 2 reduce_in_place LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_reduce_root_reads_3 EXE host_readv_bound ARGS procs 100000 direct 3 reduce
        LABELS host ENV MGCOMM_HOST_READV_FAST=0 MGCOMM_HOST_READV_MAX_BYTES=0
            MGCOMM_HOST_DIRECT_BYTES=4096 MGCOMM_HOST_SLOT_BYTES=4096)
mg_test(NAME host_reduce_staged_procs_bound EXE host_readv_bound
        ARGS procs 524288 staged 2 reduce LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_reduce_staged_procs_3 EXE host_readv_bound ARGS procs 65536 staged 3 reduce
        LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_reduce_staged_procs_slow EXE host_readv_bound ARGS procs 65536 staged 2 reduce
        LABELS host ENV MGCOMM_HOST_READV_FAST=0)
mg_test(NAME host_readv_fast_procs_scatter EXE host_readv_bound ARGS procs 1048576 direct 3 scatter
        LABELS host ENV MGCOMM_HOST_READV_FAST=1)
# ... but a gather, whose root reads every piece alone, stages from 16 MiB read there.
mg_test(NAME host_readv_fast_procs_gather EXE host_readv_bound ARGS procs 4194304 direct 3 gather
        LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_readv_fast_procs_gather_big EXE host_readv_bound
        ARGS procs 16777216 staged 2 gather LABELS host ENV MGCOMM_HOST_READV_FAST=1)
# Where process_vm_readv is fast: direct between processes from 8 KiB, unbounded
# for one reader, bounded from 128 KiB where several readers share the buffer.
mg_test(NAME host_readv_fast_procs_direct EXE host_readv_bound ARGS procs 65536 direct
        LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_readv_fast_procs_one_reader EXE host_readv_bound ARGS procs 1048576 direct
        LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_readv_fast_procs_shared EXE host_readv_bound ARGS procs 1048576 staged 3
        LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_readv_fast_procs_shared_small EXE host_readv_bound ARGS procs 32768 direct 3
        LABELS host ENV MGCOMM_HOST_READV_FAST=1)
# ... and a broadcast or scatter of 2 ranks whose root's call is in place, from 32 MiB, is staged
# by its root (its reader follows); out of place, or between threads, it stays direct.
mg_test(NAME host_readv_fast_procs_root_stages EXE host_readv_bound
        ARGS procs 33554432 staged 2 broadcast_in_place LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_readv_fast_procs_root_stages_scatter EXE host_readv_bound
        ARGS procs 33554432 staged 2 scatter_in_place LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_readv_fast_procs_root_lends EXE host_readv_bound
        ARGS procs 33554432 direct 2 broadcast LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_readv_fast_procs_root_lends_small EXE host_readv_bound
        ARGS procs 16777216 direct 2 scatter_in_place LABELS host ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_readv_threads_root_lends EXE host_readv_bound
        ARGS threads 33554432 direct 2 broadcast_in_place LABELS host)
# Two thread ranks on one CPU: a waiting rank that finds its peer on its CPU yields at once
# (tests/unit/host_shared_cpu.c).
mg_test(NAME host_shared_cpu SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_shared_cpu.c LABELS host
        TIMEOUT 120)
# Ranks bound to their CPUs keep them while they wait, beside a busy thread
# (tests/unit/host_busy_cpu.c).
mg_test(NAME host_busy_cpu SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_busy_cpu.c LABELS host
        TIMEOUT 120)
set_tests_properties(host_busy_cpu PROPERTIES RUN_SERIAL TRUE) # it times calls
# all_reduce and reduce_scatter up to the mails' size travel in the ranks' mails, one element
# more through the slots (tests/unit/host_mail.c).
mg_test(NAME host_mail SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_mail.c LABELS host)
# A staged scatter's root writes each reader's piece into the reader's own slot: a step per slot
# of each piece (tests/unit/host_scatter_steps.c).
mg_test(NAME host_scatter_steps SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_scatter_steps.c
        LABELS host)
# An owner whose readers copy out of its buffer does not sleep while they copy
# (tests/unit/host_readers_spin.c).
mg_test(NAME host_readers_spin SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_readers_spin.c
        LABELS host)
# Between thread ranks, messages from MGCOMM_HOST_DIRECT_BYTES are lent: the receiver copies
# from the sender's buffer, compares the sizes, and the send ends with that copy
# (tests/unit/host_lent.c).
mg_test(NAME host_lent SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_lent.c LABELS host TIMEOUT 120
        ENV MGCOMM_HOST_DIRECT_BYTES=4096)
# Ranks that are all threads of one process never call process_vm_readv: under a seccomp filter
# that kills on it, init_all, collectives and split run (tests/unit/host_seccomp.c).
mg_test(NAME host_seccomp SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_seccomp.c LABELS host)
# Messages of up to 160 bytes go in the line of their lane's head while it is free, else
# through the ring; lent ones are described there; in order either way (tests/unit/host_box.c).
mg_test(NAME host_box SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_box.c LABELS host TIMEOUT 120
        ENV MGCOMM_HOST_DIRECT_BYTES=4096)
mg_test(NAME host_box_procs EXE host_box ARGS procs LABELS host TIMEOUT 120
        ENV MGCOMM_HOST_DIRECT_BYTES=4096)
# Between processes too, from MGCOMM_HOST_DIRECT_BYTES: the receiver reads the sender's buffer
# (process_vm_readv) and claims the message after the copy, so that the sender never waits for
# it (tests/unit/host_lent_procs.c).
mg_test(NAME host_lent_procs SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_lent_procs.c LABELS host
        ENV MGCOMM_HOST_DIRECT_BYTES=65536)
# By default, from 256 KiB where process_vm_readv is fast, and where it is slow from 32 KiB while
# the machine has a CPU for every rank, else never.
mg_test(NAME host_lent_procs_fast EXE host_lent_procs ARGS lent LABELS host
        ENV MGCOMM_HOST_READV_FAST=1)
mg_test(NAME host_lent_procs_slow EXE host_lent_procs ARGS slow LABELS host
        ENV MGCOMM_HOST_READV_FAST=0)
# Collective data copies (host_copy.h): memcpy's bytes at every offset, and no collapse when the
# destination lies a few bytes past the source modulo 4 KiB (malloc'd buffers against the slots).
mg_test(NAME host_copy SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_copy.c LABELS host)
# Staged collectives take the two slots in turn whatever mail or direct collectives come between
# (tests/unit/host_slot_turns.c); between processes also with a direct reduce before a scatter.
mg_test(NAME host_slot_turns_threads EXE host_slot_turns
        SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_slot_turns.c ARGS threads LABELS host
        ENV MGCOMM_HOST_DIRECT_BYTES=1073741824)
mg_test(NAME host_slot_turns_procs EXE host_slot_turns ARGS procs LABELS host
        ENV MGCOMM_HOST_DIRECT_BYTES=1073741824)
mg_test(NAME host_slot_turns_procs_direct EXE host_slot_turns ARGS procs LABELS host
        ENV MGCOMM_HOST_DIRECT_BYTES=65536 MGCOMM_HOST_READV_FAST=1)
# The slot stores' state (tests/unit/host_pace.c): votes and lifting by the rules; between
# processes every store taken as slow sends the liftable collectives direct, and back.
mg_test(NAME host_pace_logic EXE host_pace SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_pace.c
        ARGS logic LABELS host)
mg_test(NAME host_pace_slow EXE host_pace ARGS slow LABELS host
        ENV MGCOMM_HOST_DIRECT_BYTES=1073741824 MGCOMM_HOST_READV_FAST=0
            MGCOMM_HOST_PACE_GBPS=1000000)
mg_test(NAME host_pace_off EXE host_pace ARGS off LABELS host
        ENV MGCOMM_HOST_DIRECT_BYTES=1073741824 MGCOMM_HOST_READV_FAST=0 MGCOMM_HOST_PACE_GBPS=0)
