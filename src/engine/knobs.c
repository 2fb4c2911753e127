/* SPDX-License-Identifier: MIT */
/* knobs.c - the table of every option (knobs.h). */
#include "knobs.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cluster.h"
#include "coll_algo.h"
#include "units.h"

#define ALL_RUNS (SL_CMD_RUN | SL_CMD_COLL | SL_CMD_TRAIN | SL_CMD_COMPARE | SL_CMD_SANDBOX)
#define HW (ALL_RUNS | SL_CMD_PLAN)
#define TRAINS (SL_CMD_TRAIN | SL_CMD_SANDBOX)
#define MODELS (SL_CMD_TRAIN | SL_CMD_COMPARE | SL_CMD_PLAN | SL_CMD_SANDBOX)
#define DISPLAY (SL_CMD_SANDBOX | SL_CMD_LESSON)
#define S SL_KF_SETUP
#define FIG SL_KF_FIGURE
#define SHAPE SL_KF_SHAPE

#define CL(f) SL_KP_CLUSTER, offsetof(sl_cluster_config, f)
#define GE(f) SL_KP_GEMM, offsetof(sl_gemm_spec, f)
#define MO(f) SL_KP_MODEL, offsetof(sl_model_spec, f)
#define LA(f) SL_KP_LAYOUT, offsetof(sl_layout, f)
#define NONE SL_KP_NONE, 0

/* The ranges of a link, a compute rate and a memory are the engine's own
 * (cluster.c checks a configuration against these rows). */
static const sl_knob table[] = {
    /* ---- the cluster ---- */
    {"devices", SL_OPT_DEVICES, SL_KT_INT, "N", 1, SL_MAX_PLAN_DEVICES,
     "1 to 16384: 64 for a run that computes, 1024 timing only", NULL, HW | SL_CMD_PLAN, S,
     SL_KG_CLUSTER, CL(devices), SL_KC_INT, NULL, 0,
     "emulated devices, 1 to 64, or to 1024 in a timing-only\nrun, 16384 for plan (default 4)",
     .man = "The number of emulated devices, 1 to 64 (default 4); up to 1024 with\n"
            ".B \\-\\-dry\\-run\n"
            "(but 64 for\n"
            ".BR sandbox ),\n"
            "and up to 16384 for\n"
            ".BR plan .\n"},
    {"devices-per-node", SL_OPT_DEVICES_PER_NODE, SL_KT_INT, "G", 0, SL_MAX_PLAN_DEVICES,
     "0 (one node) to 16384", NULL, HW, S, SL_KG_CLUSTER, CL(devices_per_node), SL_KC_INT,
     "per-node", 0,
     "G devices per node; G must divide N; 0: one node\n(default: the preset's node size when N "
     "exceeds it,\nelse one node)",
     .man = "Group the devices in nodes of\n"
            ".IR G ;\n"
            "links inside a node use\n"
            ".B \\-\\-bandwidth\n"
            "and\n"
            ".BR \\-\\-latency ,\n"
            "links between nodes\n"
            ".B \\-\\-inter\\-bandwidth\n"
            "and\n"
            ".BR \\-\\-inter\\-latency .\n"
            ".I G\n"
            "must divide\n"
            ".IR N .\n"
            "Without it, the devices form one node, except when they outnumber the\n"
            "preset's node size (8 for the GPU presets) and that size divides\n"
            ".IR N :\n"
            "then the preset's node size is used.\n"},
    {"topology", SL_OPT_TOPOLOGY, SL_KT_WORD, NULL, 0, 0, NULL, "full, ring", HW, S, SL_KG_CLUSTER,
     CL(topology), SL_KC_INT, NULL, 0, "every pair linked, or only ring neighbours (default full)",
     .man = ".B full\n"
            "links every pair of devices (the default);\n"
            ".B ring\n"
            "links only ring neighbours, and other pairs pay one latency per hop.\n"
            "A ring is a single node.\n"},
    {"preset", SL_OPT_PRESET, SL_KT_TEXT, "NAME", 0, 0, NULL, NULL, HW, S, SL_KG_CLUSTER, NONE,
     SL_KC_INT, NULL, 0,
     "hardware figures (default h100; see --list-presets and\nshardlab-hardware(5) for your own)",
     .man = "The hardware figures to start from (default\n"
            ".BR h100 ;\n"
            "see\n"
            ".BR PRESETS ).\n"
            "A name is found among the user's files, the shipped files, then the\n"
            "built\\-in table\n"
            ".RB ( shardlab\\-hardware (5));\n"
            "a file found that is not right is an error.\n"},
    {"hardware", SL_OPT_HARDWARE, SL_KT_TEXT, "FILE", 0, 0, NULL, NULL, HW, S, SL_KG_CLUSTER, NONE,
     SL_KC_INT, NULL, 0, "hardware figures from a JSON file (shardlab-hardware(5))",
     .man = "The hardware figures from a JSON file\n"
            ".RB ( shardlab\\-hardware (5)),\n"
            "instead of a preset; the other options override its figures as they do a\n"
            "preset's.\n"
            "A file that is not right is refused with one line,\n"
            ".IB FILE \": \" FIELD \": \" \"what is wrong\" ,\n"
            "and nothing runs.\n"
            "Not with\n"
            ".BR \\-\\-preset .\n"},
    {"flops", SL_OPT_FLOPS, SL_KT_FLOPS, "RATE", 1e6, 1e18, "1 MFLOP/s to 1000 PFLOP/s", NULL, HW,
     S | FIG, SL_KG_CLUSTER, CL(flops), SL_KC_DOUBLE, NULL, 0,
     "compute rate per device, e.g. 989TFLOP/s", .man = "Compute rate per device.\n"},
    /* At least one whole byte; at most 1 PiB, so it fits a uint64_t. */
    {"memory", SL_OPT_MEMORY, SL_KT_BYTES, "SIZE", 1, 1125899906842624.0, "1 B to 1 PiB", NULL, HW,
     S | FIG, SL_KG_CLUSTER, CL(memory), SL_KC_U64, NULL, 0, "memory per device, e.g. 80GiB",
     .man = "Memory per device.\n"
            "A buffer that does not fit fails the run with a message naming the device,\n"
            "what it needed and what was free.\n"},
    {"bandwidth", SL_OPT_BANDWIDTH, SL_KT_RATE, "RATE", 1e3, 1e15, "1 KB/s to 1 PB/s", NULL, HW,
     S | FIG | SL_KF_TUI, SL_KG_CLUSTER, CL(intra.bandwidth), SL_KC_DOUBLE, NULL, 0,
     "link bandwidth inside a node, e.g. 450GB/s, 400Gb/s (as\ngiven: a preset's line rate is "
     "scaled to its achievable\nshare under realistic efficiency, an explicit one is not)",
     .man = "Link bandwidth inside a node, per direction.\n"},
    {"latency", SL_OPT_LATENCY, SL_KT_TIME, "TIME", 0, 10, "0 to 10 s", NULL, HW,
     S | FIG | SL_KF_TUI, SL_KG_CLUSTER, CL(intra.latency), SL_KC_DOUBLE, NULL, 0,
     "link latency inside a node, e.g. 2us", .man = "Link latency inside a node.\n"},
    {"inter-bandwidth", SL_OPT_INTER_BANDWIDTH, SL_KT_RATE, "RATE", 1e3, 1e15, "1 KB/s to 1 PB/s",
     NULL, HW, S | FIG | SL_KF_TUI, SL_KG_CLUSTER, CL(inter.bandwidth), SL_KC_DOUBLE, NULL, 0,
     "link bandwidth between nodes", .man = "Link bandwidth between nodes.\n"},
    {"inter-latency", SL_OPT_INTER_LATENCY, SL_KT_TIME, "TIME", 0, 10, "0 to 10 s", NULL, HW,
     S | FIG | SL_KF_TUI, SL_KG_CLUSTER, CL(inter.latency), SL_KC_DOUBLE, NULL, 0,
     "link latency between nodes", .man = "Link latency between nodes.\n"},
    /* The device model's (realistic efficiency): a hardware file's too. */
    {"memory-bandwidth", SL_OPT_MEMORY_BW, SL_KT_RATE, "RATE", 0, 1e16,
     "0 (not modelled) to 10 PB/s", NULL, HW, S | FIG | SL_KF_HWFILE, SL_KG_CLUSTER, CL(dm.mem_bw),
     SL_KC_DOUBLE, NULL, 0,
     "device memory (HBM) bandwidth, for the memory-bound\nkernels of realistic efficiency, "
     "e.g. 3.35TB/s (default:\nthe preset's)",
     NULL},
    {"kernel-launch", SL_OPT_KERNEL_LAUNCH, SL_KT_TIME, "TIME", 0, 1, "0 to 1 s", NULL, HW,
     S | FIG | SL_KF_HWFILE, SL_KG_CLUSTER, CL(dm.launch_s), SL_KC_DOUBLE, NULL, 0,
     "the cost of launching one kernel under realistic\nefficiency, e.g. 0 for CUDA graphs "
     "(default: the\npreset's, 2us on the shipped GPUs)",
     NULL},
    {"timing", SL_OPT_TIMING, SL_KT_WORD, NULL, 0, 0, NULL, "model, measured", ALL_RUNS, S,
     SL_KG_CLUSTER, CL(timing), SL_KC_INT, NULL, 0,
     "compute time from the rate, or the thread's CPU time",
     .man = ".B model\n"
            "(the default): compute time from the device model (see\n"
            ".BR \\-\\-efficiency ),\n"
            "deterministic.\n"
            ".BR measured :\n"
            "compute time = the device thread's own CPU time for its sgemm calls, which\n"
            "the number of host cores does not inflate.\n"},
    {"precision", SL_OPT_PRECISION, SL_KT_WORD, NULL, 0, 0, NULL, "fp32, bf16", HW, S,
     SL_KG_CLUSTER, CL(precision), SL_KC_INT, NULL, 0,
     "bytes of an emulated element and the rate used (default:\nthe preset's, bf16 on "
     "accelerators, fp32 on the host)",
     .man = "The emulated element: 2 or 4 bytes for every message, activation and\n"
            "gradient, parameters, gradients and optimizer state as mixed\\-precision Adam\n"
            "keeps them (bf16: 2, 2 and 12 bytes a parameter; fp32: 4, 4 and 8), and the\n"
            "preset's rate for that precision.\n"
            "The host always computes in fp32.\n"
            "Default: the preset's (bf16 on accelerators, fp32 on\n"
            ".BR host ).\n"
            ".B coll\n"
            "always moves fp32 elements: its sizes are the bytes on the wire.\n"},
    {"efficiency", SL_OPT_EFFICIENCY, SL_KT_WORD, NULL, 0, 0, NULL, "ideal, realistic", HW, S,
     SL_KG_CLUSTER, CL(efficiency), SL_KC_INT, NULL, 0,
     "kernels at their shapes' achievable rates and memory\ntime, with a launch cost (realistic); "
     "or every GEMM at\npeak and all else free (ideal) (default: the preset's,\nrealistic on "
     "accelerators, ideal on the host)",
     .man = ".BR realistic :\n"
            "each GEMM takes a launch plus the longer of its FLOPs at an achievable rate\n"
            "(the peak times the best measured GEMM fraction of the preset, the busy share\n"
            "of the last wave of output tiles, and K/(K+64)) and its bytes at the memory\n"
            "bandwidth; element\\-wise kernels take a launch plus their bytes at the memory\n"
            "bandwidth; the links run at the share of their line rate collectives reach,\n"
            "and (on the full topology) a device's one port inside its node and one\n"
            "network adapter each carry one link's bandwidth in all, so the pipeline\n"
            "messages it sends (or takes) at once through the same one share it.\n"
            ".BR ideal :\n"
            "every GEMM at the peak rate, element\\-wise work and launches free, links at\n"
            "their line rate and independent of each other: the closed\\-form machine the\n"
            "lessons use.\n"
            "Default: the preset's (realistic on accelerators, ideal on\n"
            ".BR host ).\n"
            "See\n"
            ".B \\-\\-list\\-presets\n"
            "for each preset's figures and sources, and docs/validation.md for how they\n"
            "compare with published measurements.\n"},
    {"slowdown", SL_OPT_SLOWDOWN, SL_KT_REAL, "X", 1, 1e6, "1 = real time, to 1000000", NULL,
     ALL_RUNS, 0, SL_KG_CLUSTER, CL(slowdown), SL_KC_DOUBLE, NULL, 0,
     "pace the run in wall time, X times slower than emulated\n(default: headless, no pacing)",
     .man = "Pace the run in wall time as the live view would: the bytes cross the links\n"
            "in chunks released X times slower than emulated time (1 is real time, up to\n"
            "1000000).\n"
            "Without it the run is headless and unpaced.\n"
            "Emulated times are the same either way.\n"
            ".IP\n"
            ".BR sandbox :\n"
            "the playback speed: wall time is emulated time times\n"
            ".IR X .\n"
            "Without it, a speed that makes the scenario last about four seconds.\n"},
    /* The algorithms are the table's of coll_algo.c (sl_knob_choices). */
    {"algorithm", SL_OPT_ALGORITHM, SL_KT_WORD, NULL, 0, 0, NULL, NULL, ALL_RUNS, S, SL_KG_CLUSTER,
     GE(algo), SL_KC_INT, "algo", 0, "collective algorithm (default ring)",
     .man = "The collective algorithm: bandwidth\\-optimal rings (the default) or\n"
            "binomial trees (log2 \\fIp\\fR latency terms).\n"},
    /* ---- output ---- */
    {"format", SL_OPT_FORMAT, SL_KT_WORD, NULL, 0, 0, NULL, "text, json, csv",
     HW | SL_CMD_CHECK | SL_CMD_LESSON | SL_CMD_INSPECT | SL_CMD_VERIFY, 0, SL_KG_OUTPUT, NONE,
     SL_KC_INT, NULL, 0, "report format (default text)",
     .man = "The report on stdout: readable text (the default) or a JSON object (see\n"
            ".BR OUTPUT ).\n"
            ".IP\n"
            ".BR lesson :\n"
            "With\n"
            ".B \\-\\-headless\n"
            "only: the text, or one JSON report printed when the lesson ends: its\n"
            ".BR title ,\n"
            ".B steps\n"
            "(each with its\n"
            ".BR kind ,\n"
            ".B line\n"
            "and\n"
            ".BR text ;\n"
            "a check whether it\n"
            ".BR held ,\n"
            "a question its choices, every answer with its\n"
            ".B verdict\n"
            "and the\n"
            ".BR expected ,\n"
            "the end the score) and whether\n"
            ".BR every_check_held .\n"
            "The answers still come from standard input, so it is refused at a terminal\n"
            "without\n"
            ".BR \\-\\-demo .\n"},
    {"trace", SL_OPT_TRACE, SL_KT_TEXT, "FILE", 0, 0, NULL, NULL,
     (ALL_RUNS & ~SL_CMD_COMPARE) | SL_CMD_RESHARD, 0, SL_KG_OUTPUT, NONE, SL_KC_INT, NULL, 0,
     "write the event trace as Chrome Trace Event JSON",
     .man = "Write the event trace (every compute, send, receive and reduce with its\n"
            "emulated and wall\\-clock times) as Chrome Trace Event JSON; it opens in\n"
            "Perfetto (https://ui.perfetto.dev) or chrome://tracing (see\n"
            ".B OUTPUT\n"
            "for its tracks).\n"
            "A\n"
            ".I FILE\n"
            "ending in\n"
            ".B .gz\n"
            "is written gzip\\-compressed;\n"
            ".B \\-\n"
            "writes the trace to stdout, and the report then goes to stderr, so that\n"
            "stdout is one JSON document.\n"
            "For\n"
            ".B coll\n"
            "with a range of sizes, the trace holds the last size.\n"
            ".I FILE\n"
            "must not be a directory.\n"
            ".IP\n"
            ".BR sandbox :\n"
            "(a cluster option) On quitting, write the trace of the run shown (its\n"
            "devices in one process: this trace does not name nodes).\n"
            ".I FILE\n"
            "cannot be\n"
            ".BR \\- :\n"
            "the screen is stdout.\n"},
    /* ---- the sharded product ---- */
    {"strategy", SL_OPT_STRATEGY, SL_KT_WORD, NULL, 0, 0, NULL, "single, colwise, rowwise",
     SL_CMD_RUN | SL_CMD_SANDBOX, S, SL_KG_WORKLOAD, GE(split), SL_KC_INT, NULL, 0,
     "one device; W split by columns (all-gather); W split\nby rows (all-reduce) "
     "(default colwise)",
     .man = "How to split the product (default\n"
            ".BR colwise ).\n"},
    {"m", SL_OPT_M, SL_KT_INT, "M", 1, 1000000, NULL, NULL, SL_CMD_RUN | SL_CMD_SANDBOX, S,
     SL_KG_WORKLOAD, GE(m), SL_KC_INT, NULL, 0, "rows of X and Y, 1 to 1000000 (default 1024)",
     .man = "Rows of X and Y (default 1024); with\n"
            ".B \\-\\-k\n"
            "and\n"
            ".BR \\-\\-n ,\n"
            "no matrix may exceed 2^31 elements.\n"
            "Every device must get at least one column\n"
            ".RB ( colwise )\n"
            "or row\n"
            ".RB ( rowwise )\n"
            "of W.\n"},
    {"k", SL_OPT_K, SL_KT_INT, "K", 1, 1000000, NULL, NULL, SL_CMD_RUN | SL_CMD_SANDBOX, S,
     SL_KG_WORKLOAD, GE(k), SL_KC_INT, NULL, 0,
     "columns of X, rows of W, 1 to 1000000 (default 4096)", NULL},
    {"n", SL_OPT_N, SL_KT_INT, "N", 1, 1000000, NULL, NULL, SL_CMD_RUN | SL_CMD_SANDBOX, S,
     SL_KG_WORKLOAD, GE(n), SL_KC_INT, NULL, 0, "columns of W and Y, 1 to 1000000 (default 4096)",
     NULL},
    /* The seed of the product's X and W, and of a model's weights and
     * data: one value, stored in both. */
    {"seed", SL_OPT_SEED, SL_KT_INT, "S", 0, 2147483647.0, NULL, NULL,
     SL_CMD_RUN | SL_CMD_SANDBOX | SL_CMD_TRAIN | SL_CMD_COMPARE, S, SL_KG_WORKLOAD, GE(seed),
     SL_KC_U64, NULL, 0,
     "seed of the random X and W, and of a model's initial\nweights and data "
     "(default 1)",
     .man = "The seed of the pseudo\\-random X and W in [\\-1, 1) (default 1).\n"},
    {"dry-run", SL_OPT_DRY_RUN, SL_KT_FLAG, NULL, 0, 1, NULL, NULL,
     SL_CMD_RUN | SL_CMD_COLL | SL_CMD_TRAIN | SL_CMD_SANDBOX, S, SL_KG_DRY_RUN, CL(timing_only),
     SL_KC_INT, NULL, 0,
     "timing only: the same schedule, collectives and emulated\ntimeline with no buffers, no "
     "arithmetic and no bytes\ncopied; memory is counted; up to 1024 devices",
     .man = "Run the same schedule, the same collectives and the same emulated timeline\n"
            "with no buffers allocated, no arithmetic and no bytes copied: every transfer\n"
            "still takes its emulated time on its link, every product its FLOPs over the\n"
            "device rate, and memory is still accounted buffer by buffer (a device that\n"
            "runs out fails the run as it would in full).\n"
            "Emulated times, traffic and memory are those of the full run, exactly; there\n"
            "is nothing to check, so the report says\n"
            ".B check none\n"
            "and, for\n"
            ".BR train ,\n"
            "has no losses; for\n"
            ".BR coll ,\n"
            "#wrong is 0, nothing having been computed to check (sizes of 16 GiB over 32\n"
            "devices run this way).\n"
            "Models no host could hold run this way (a 175B model over 1,024 devices);\n"
            "the host limit then does not apply.\n"
            "Not with\n"
            ".B \\-\\-timing=measured\n"
            "(nothing is measured),\n"
            ".B \\-\\-save\n"
            "or\n"
            ".B \\-\\-load\n"
            "(there are no values).\n"},
    /* ---- the layout ---- */
    {"tp", SL_OPT_TP, SL_KT_INT, "T", 1, SL_MAX_PLAN_DEVICES, NULL, NULL,
     TRAINS | SL_CMD_PLAN | SL_CMD_RESHARD, S, SL_KG_LAYOUT, LA(tp), SL_KC_INT, NULL, 0,
     "tensor-parallel size (default 1)",
     .man = "Tensor\\-parallel size (default 1).\n"
            "The device count is tp x pp x dp unless\n"
            ".B \\-\\-devices\n"
            "is given, and then it must equal it.\n"},
    {"pp", SL_OPT_PP, SL_KT_INT, "P", 1, SL_MAX_PLAN_DEVICES, NULL, NULL,
     TRAINS | SL_CMD_PLAN | SL_CMD_RESHARD, S, SL_KG_LAYOUT, LA(pp), SL_KC_INT, NULL, 0,
     "pipeline stages (default 1)", NULL},
    {"dp", SL_OPT_DP, SL_KT_INT, "D", 1, SL_MAX_PLAN_DEVICES, NULL, NULL,
     TRAINS | SL_CMD_PLAN | SL_CMD_RESHARD, S, SL_KG_LAYOUT, LA(dp), SL_KC_INT, NULL, 0,
     "data-parallel replicas (default 1)", NULL},
    {"cp", SL_OPT_CP, SL_KT_INT, "C", 1, SL_MAX_DEVICES, NULL, NULL, TRAINS | SL_CMD_PLAN, S,
     SL_KG_LAYOUT, LA(cp), SL_KC_INT, NULL, 0,
     "context-parallel size: devices sharing each sequence\n(default 1)",
     .man = "Context\\-parallel size (default 1): the devices that share each sequence of a\n"
            "replica, each holding two of its 2C chunks (chunk i and chunk 2C\\-1\\-i, which\n"
            "balances the causal mask's work), so activations divide by C.  Attention\n"
            "brings every chunk's keys and values to every device by\n"
            ".BR \\-\\-cp\\-comm ;\n"
            "the rest of the block runs on the device's own tokens.  Gradients are summed,\n"
            "and ZeRO shards, over dp x cp devices (Megatron\\-Core's data\\-and\\-context\n"
            "group).  In the mesh the C devices of a replica follow one another on the dp\n"
            "axis (under the default order, Megatron\\-Core's tp\\-cp\\-dp\\-pp).  Needs\n"
            ".B \\-\\-attention=flash\n"
            "and a sequence that divides into 2C chunks; not with attention dropout.\n"
            "The device count is tp x cp x pp x dp.\n"
            ".IP\n"
            ".BR plan :\n"
            "Every layout of this context\\-parallel size (default 1), whose dp is then the\n"
            "devices over tp x cp x pp.\n"},
    {"cp-comm", SL_OPT_CP_COMM, SL_KT_WORD, NULL, 0, 0, NULL, "ring, allgather",
     TRAINS | SL_CMD_PLAN, S, SL_KG_LAYOUT, LA(cp_comm), SL_KC_INT, NULL, 0,
     "how --cp moves keys and values (default ring)",
     .man = "How context parallelism moves keys and values.\n"
            ".B ring\n"
            "(the default; Liu et al. 2023, arXiv 2310.01889, as Megatron\\-Core runs it):\n"
            "C\\-1 hops to the next device, each beside the attention on the block already\n"
            "held; in the backward pass the blocks go round again and their key and value\n"
            "gradients follow them home.\n"
            ".B allgather\n"
            "(Llama 3's long\\-context stage; Dubey et al. 2024, arXiv 2407.21783): every\n"
            "block all\\-gathered before the forward and again before the backward, their\n"
            "gradients reduce\\-scattered after it, nothing beside compute.  Either way a\n"
            "device moves (C\\-1)/C of the sequence's keys and values in the forward, and as\n"
            "much again and as much of their gradients in the backward.\n"},
    {"schedule", SL_OPT_SCHEDULE, SL_KT_WORD, NULL, 0, 0, NULL, "gpipe, 1f1b, interleaved",
     TRAINS | SL_CMD_PLAN | SL_CMD_COMPARE, S, SL_KG_LAYOUT, LA(schedule), SL_KC_INT, NULL, 0,
     "pipeline schedule (default 1f1b)",
     .man = "The pipeline schedule (default\n"
            ".BR 1f1b ).\n"
            ".IP\n"
            ".BR plan :\n"
            "Only layouts of this pipeline schedule,\n"
            ".BR gpipe ,\n"
            ".B 1f1b\n"
            "or\n"
            ".B interleaved\n"
            "(unset: all three; a layout of pp = 1 is one 1F1B row).\n"
            "GPipe named so also lists pipelines of one micro\\-batch, which the plan\n"
            "otherwise leaves to 1F1B (their actions are the same).\n"},
    {"chunks", SL_OPT_CHUNKS, SL_KT_INT, "V", 1, 64, NULL, NULL, TRAINS | SL_CMD_PLAN, S,
     SL_KG_LAYOUT, LA(chunks), SL_KC_INT, NULL, 0,
     "model chunks per device, interleaved (default 2)",
     .man = "Model chunks per device for\n"
            ".B interleaved\n"
            "(default 2); every chunk needs a layer (a stage's layers split over its chunks\n"
            "as\n"
            ".B \\-\\-stage\\-layers\n"
            "says) and the micro\\-batch count must be a multiple of\n"
            ".IR P .\n"
            ".IP\n"
            ".BR plan :\n"
            "Only layouts of\n"
            ".I V\n"
            "model chunks a device: 1 for GPipe and 1F1B, 2 or more interleaved, any\n"
            "count that divides the fullest stage's layers (unset: 1, and 2 to 16\n"
            "interleaved).\n"},
    {"stage-layers", SL_OPT_STAGE_LAYERS, SL_KT_TEXT, "LIST", 0, 0, NULL, NULL,
     TRAINS | SL_CMD_PLAN | SL_CMD_RESHARD, S, SL_KG_LAYOUT, NONE, SL_KC_INT, NULL, 0,
     "layers per pipeline stage: even, ends (fewer on the\nfirst and last stage) or counts "
     "as 7,8,8,7\n(default even)",
     .man = "How the\n"
            ".I L\n"
            "layers fall on the\n"
            ".I P\n"
            "pipeline stages.\n"
            ".B even\n"
            "(the default):\n"
            ".RI L / P\n"
            "each, the first\n"
            ".RI L % P\n"
            "stages one more.\n"
            ".BR ends :\n"
            "the middle stages hold\n"
            ".RI \\(lc L / P \\(rc\n"
            "each and the rest comes off the first and the last stage in turn, which also\n"
            "hold the embedding and the LM head (Llama 3 405B's 126 layers on 16 stages:\n"
            "7, 8, ..., 8, 7; Dubey et al. 2024, arXiv 2407.21783, section 3.3.2;\n"
            "Megatron\\-LM's \\-\\-decoder\\-first\\-pipeline\\-num\\-layers and\n"
            "\\-\\-decoder\\-last\\-pipeline\\-num\\-layers).\n"
            "A list gives each stage's count, first to last, summing to\n"
            ".IR L .\n"
            "Interleaved, a stage's layers split over its\n"
            ".I V\n"
            "chunks as evenly as they can, the first chunks one more; every chunk needs a\n"
            "layer.\n"
            "A checkpoint records the split and reshards to any other.\n"
            ".IP\n"
            ".BR plan :\n"
            "Only layouts of this rule (a list: of its stage count; unset: even, and ends\n"
            "where the layers do not divide over the stages).\n"},
    {"microbatches", SL_OPT_MICROBATCHES, SL_KT_INT, "M", 1, 4096, NULL, NULL,
     TRAINS | SL_CMD_PLAN | SL_CMD_COMPARE, S, SL_KG_LAYOUT, LA(microbatches), SL_KC_INT, NULL, 0,
     "micro-batches per replica and step (default 2*pp, or 1)",
     .man = "Micro\\-batches per replica and step (default 2P when P > 1, else 1; fewer when\n"
            "the batch is smaller).\n"},
    {"sequence-parallel", SL_OPT_SP, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, TRAINS, S, SL_KG_LAYOUT,
     LA(seq_parallel), SL_KC_INT, NULL, 0,
     "split each TP all-reduce into reduce-scatter + all-gather",
     .man = "Split each TP all\\-reduce into a reduce\\-scatter and an all\\-gather, with the\n"
            "residual stream split by rows (needs T > 1).\n"},
    {"zero1", SL_OPT_ZERO1, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, TRAINS, S, SL_KG_LAYOUT, LA(zero),
     SL_KC_INT, NULL, 0, "shard Adam's state over the data-parallel replicas\n(--zero=1)",
     .man = "Shard Adam's state over the data\\-parallel replicas (needs D > 1); the same as\n"
            ".BR \\-\\-zero=1 .\n"},
    {"zero", SL_OPT_ZERO, SL_KT_INT, "STAGE", 0, 3, NULL, NULL, TRAINS | SL_CMD_PLAN, S,
     SL_KG_LAYOUT, LA(zero), SL_KC_INT, NULL, 0,
     "ZeRO stage over the data-parallel replicas: 1 Adam's\nstate sharded, 2 gradients too, 3 "
     "parameters too\n(FSDP; default 0)",
     .man = "Shard over the data\\-parallel replicas (Rajbhandari et al. 2020; needs D > 1):\n"
            ".B 1\n"
            "Adam's state;\n"
            ".B 2\n"
            "its gradients too, reduce\\-scattered layer by layer after each micro\\-batch's\n"
            "backward pass (PyTorch FSDP's SHARD_GRAD_OP);\n"
            ".B 3\n"
            "its parameters too, each layer's all\\-gathered before each micro\\-batch's\n"
            "forward and again before its backward, and freed after use (FSDP's FULL_SHARD).\n"
            "Stages 2 and 3 shard each transformer block on its own and the rest (embedding,\n"
            "head, norms and replicated biases) as one root unit, which stage 3 gathers once a\n"
            "step and keeps, as FSDP2 keeps its root module.  A step of\n"
            ".I M\n"
            "micro\\-batches on\n"
            ".I D\n"
            "replicas moves (D\\-1)/D of the blocks' parameter bytes 3M times under stage 3\n"
            "(M+1 times under stage 2, twice under 0 and 1).  Default 0.\n"
            ".IP\n"
            ".BR plan :\n"
            "Only layouts of this stage (unset: none and ZeRO\\-1 for every layout with\n"
            ".I D\n"
            "> 1, and ZeRO\\-2 and 3 where the stage below does not fit: they save\n"
            "memory and add traffic, which overlap hides only in part).\n"},
    {"reshard-after-forward", SL_OPT_RESHARD_FWD, SL_KT_WORD, NULL, 0, 0, NULL, "yes, no",
     TRAINS | SL_CMD_PLAN, S, SL_KG_LAYOUT, LA(zero_keep), SL_KC_INT, NULL, 0,
     "ZeRO-3: free a block's gathered parameters after its\nforward (yes, the default) or keep "
     "them for its\nbackward (no)",
     .man = "Under ZeRO\\-3, whether a block's gathered parameters are freed after its forward\n"
            "pass and gathered again for its backward\n"
            ".RB ( yes ,\n"
            "the default; PyTorch FSDP's reshard_after_forward=True) or kept from the\n"
            "micro\\-batch's forward to its backward\n"
            ".RB ( no ):\n"
            "one all\\-gather less a block and micro\\-batch, (D\\-1)/D of the blocks'\n"
            "parameter bytes 2M times a step instead of 3M, for every block's parameters\n"
            "held while micro\\-batches are in flight.  Needs\n"
            ".BR \\-\\-zero=3 .\n"
            ".IP\n"
            ".BR plan :\n"
            "its ZeRO\\-3 rows keep them (not searched).\n"},
    {"overlap", SL_OPT_OVERLAP, SL_KT_WORD, NULL, 0, 0, NULL, "auto, on, off", TRAINS | SL_CMD_PLAN,
     S, SL_KG_LAYOUT, LA(overlap), SL_KC_INT, NULL, 0,
     "communication beside compute: data-parallel buckets\nduring the backward pass, ZeRO's "
     "collectives, TP's\ninput gradients, pipeline sends (default\nauto: on when realistic)",
     .man = "Run communication beside compute on its own stream, as PyTorch DDP and FSDP\n"
            "and Megatron\\-LM do: the last micro\\-batch's data\\-parallel gradients\n"
            "all\\-reduced in buckets of\n"
            ".B \\-\\-bucket\n"
            "bytes while its backward pass goes on (each model chunk's on its own), ZeRO\\-2\n"
            "and 3's reduce\\-scatters after each block's backward, ZeRO\\-3's gathers\n"
            "of the next block during this one, with TP each input gradient's all\\-reduce\n"
            "(with sequence parallelism, its reduce\\-scatter) beside its weight\\-gradient\n"
            "product in the backward pass, and with sequence parallelism the input's\n"
            "all\\-gather for that product beside the input gradient's (Megatron\\-LM's\n"
            "asynchronous communication), and\n"
            "the pipeline's\n"
            "sends and receives on a stream of their own, so a stage goes on to its next\n"
            "micro\\-batch while its activations travel and waits only for what it receives\n"
            "(Megatron\\-LM's overlapped p2p communication).  A kernel beside "
            "communication runs 18.9%\n"
            "slower for the time they share on the realistic machine (Lee et al. 2025,\n"
            "arXiv 2507.03114).\n"
            ".B auto\n"
            "(the default) is on under realistic efficiency and off on the ideal machine,\n"
            "whose closed forms have none.\n"
            ".IP\n"
            ".BR plan :\n"
            "with auto on the realistic machine, its best layouts also try overlap off.\n"},
    {"bucket", SL_OPT_BUCKET, SL_KT_BYTES, "SIZE", 1, 1e12, NULL, NULL, TRAINS | SL_CMD_PLAN, S,
     SL_KG_LAYOUT, LA(bucket_bytes), SL_KC_DOUBLE, NULL, 0,
     "gradient bucket with --overlap (default 25 MiB)",
     .man = "The data\\-parallel gradient bucket with\n"
            ".BR \\-\\-overlap :\n"
            "whole blocks' gradients, at least this many bytes (default 25 MiB, PyTorch\n"
            "DDP's bucket_cap_mb).\n"
            ".IP\n"
            ".BR plan :\n"
            "unless given, its best layouts also try a quarter and four times the bucket.\n"},
    {"recompute", SL_OPT_RECOMPUTE, SL_KT_WORD, NULL, 0, 0, NULL, "none, selective, full",
     TRAINS | SL_CMD_PLAN, S, SL_KG_LAYOUT, LA(recompute), SL_KC_INT, NULL, 0,
     "activation recomputation: the attention core, or each\nblock's forward, run again in the "
     "backward pass (default\nnone)",
     .man = "Activation recomputation, as Megatron\\-LM sets it:\n"
            ".B selective\n"
            "drops each layer's attention probabilities after the forward pass and runs\n"
            "the attention core's forward again in the backward pass, as Megatron\\-LM's\n"
            "checkpointed core attention does: the scores, the softmax, the dropout and\n"
            "the product with V;\n"
            ".B full\n"
            "keeps only each block's input and runs the block's forward again, its\n"
            "tensor\\-parallel collectives too, before its backward.\n"
            "The results are the same; the memory kept falls and the executed FLOPs rise.\n"
            "For\n"
            ".BR plan ,\n"
            "the least recomputation every layout uses (default\n"
            ".BR none :\n"
            "the plan turns it on, selective then full, only for a layout that does not\n"
            "fit without it).\n"},
    {"attention", SL_OPT_ATTENTION, SL_KT_WORD, NULL, 0, 0, NULL, "materialized, flash",
     TRAINS | SL_CMD_PLAN | SL_CMD_COMPARE, S, SL_KG_LAYOUT, LA(attention), SL_KC_INT, NULL, 0,
     "the attention core as one fused kernel that keeps no\ns x s matrix (FlashAttention), or "
     "scores and softmax in\ndevice memory (as Megatron-LM in 2021); the same values\n(default "
     "flash; a lesson's: materialized)",
     .man = "How the attention core runs.\n"
            ".B flash\n"
            "(the default) is FlashAttention's fused kernel (Dao et al. 2022): the s x s\n"
            "scores and probabilities of a head stay on chip, so they are neither kept for\n"
            "the backward pass nor written to device memory, and the backward kernel\n"
            "computes them again (counted in the executed FLOPs, not in the model's);\n"
            "its time is the kernels' FLOPs at the device's fused\\-attention rate\n"
            "(attention_peak_fraction,\n"
            ".BR shardlab\\-hardware (5))\n"
            "and one launch a pass.\n"
            ".B materialized\n"
            "keeps every head's probabilities in device memory and runs the softmax as\n"
            "its own memory\\-bound kernel, as Megatron\\-LM did in 2021; selective\n"
            "recomputation applies to it only.\n"
            "The values computed are the same either way.\n"
            "The engine's own default, and the lessons', is\n"
            ".BR materialized ,\n"
            "whose memory the closed forms count.\n"},
    {"mesh-order", SL_OPT_ORDER, SL_KT_TEXT, "ORDER", 0, 0, NULL, NULL, TRAINS | SL_CMD_RESHARD, S,
     SL_KG_LAYOUT, NONE, SL_KC_INT, NULL, 0,
     "device order, fastest axis first (default tp-dp-pp:\nTP groups on consecutive devices, "
     "i.e. inside a node)",
     .man = "The device order: tp, pp and dp once each, fastest first (default\n"
            ".BR tp\\-dp\\-pp ).\n"},
    /* ---- the model ---- */
    {"model", SL_OPT_MODEL, SL_KT_TEXT, "NAME|FILE", 0, 0, NULL, NULL, MODELS, S, SL_KG_MODEL, NONE,
     SL_KC_INT, NULL, 0,
     "the shape of a shipped model (gpt3-175b, megatron-1t,\nllama-3-8b, llama-3-70b, "
     "llama-3-405b, opt-175b) or a\nJSON file; the options below override "
     "it\n(shardlab-hardware(5))",
     .man = "The model's shape (layers, hidden, ffn, heads, key/value heads, MLP kind,\n"
            "norm, seq, batch, vocabulary and embeddings) from a shipped model\n"
            ".RB ( gpt3\\-175b \", \" megatron\\-1t \", \" llama\\-3\\-8b \", \" llama\\-3\\-70b "
            "\", \" llama\\-3\\-405b \", \" opt\\-175b ),\n"
            "one of the user's, or a JSON file\n"
            ".RB ( shardlab\\-hardware (5));\n"
            "the options below override it, whatever their order.\n"
            "The shipped files carry their vocabularies, so a run that computes values\n"
            "needs\n"
            ".B \\-\\-vocab=0\n"
            "with them (or\n"
            ".BR \\-\\-dry\\-run ).\n"},
    {"layers", SL_OPT_LAYERS, SL_KT_INT, "L", 1, SL_MODEL_MAX_LAYERS, NULL, NULL, MODELS, S | SHAPE,
     SL_KG_MODEL, MO(layers), SL_KC_INT, NULL, 0, "blocks (default 4)",
     .man = "Blocks (default 4).\n"},
    {"hidden", SL_OPT_HIDDEN, SL_KT_INT, "H", 1, SL_MODEL_MAX_DIM, NULL, NULL, MODELS, S | SHAPE,
     SL_KG_MODEL, MO(hidden), SL_KC_INT, NULL, 0, "width (default 128)", NULL},
    {"ffn", SL_OPT_FFN, SL_KT_INT, "F", 1, SL_MODEL_MAX_FFN, NULL, NULL, MODELS, S | SHAPE,
     SL_KG_MODEL, MO(ffn), SL_KC_INT, NULL, 0, "MLP inner width (default 512)", NULL},
    {"heads", SL_OPT_HEADS, SL_KT_INT, "A", 0, SL_MODEL_MAX_DIM, NULL, NULL, MODELS, S | SHAPE,
     SL_KG_MODEL, MO(heads), SL_KC_INT, NULL, 0,
     "attention heads, 0 for MLP-only blocks (default 4)",
     .man = "Attention heads (0: MLP\\-only blocks; default 4); the width must be a\n"
            "multiple of them.\n"},
    {"kv-heads", SL_OPT_KV_HEADS, SL_KT_INT, "G", 0, SL_MODEL_MAX_DIM, NULL, NULL, MODELS,
     S | SHAPE, SL_KG_MODEL, MO(kv_heads), SL_KC_INT, NULL, 0,
     "key/value heads, grouped-query attention: G divides A\n(default 0: as many as --heads)",
     .man = "Grouped\\-query attention: the A query heads in G groups, each sharing one\n"
            "key and one value head (Ainslie et al. 2023); G divides A, and tensor\n"
            "parallelism splits whole groups, so tp must divide G (default 0: G = A).\n"},
    {"mask", SL_OPT_MASK, SL_KT_WORD, NULL, 0, 0, NULL, "causal, full", MODELS, S, SL_KG_MODEL,
     MO(mask), SL_KC_INT, NULL, 0,
     "attention's mask: causal, each token attending to itself\nand those before it (GPT's, "
     "Llama's; the default), or\nfull, every token to every one",
     .man = "The attention mask.\n"
            ".B causal\n"
            "(the default, as GPT's and Llama's): a token attends to itself and the tokens\n"
            "before it, the scores above the diagonal set to \\-inf before the softmax, so\n"
            "no output depends on a later token.\n"
            ".BR full :\n"
            "every token attends to every one.\n"
            "The model's FLOPs (MFU's) count a causal head's two s x s products forward,\n"
            "and their four backward, at half their full size (s^2 d each, as\n"
            "FlashAttention's benchmarks count them); with\n"
            ".B full\n"
            "whole (2 s^2 d, as Narayanan et al. 2021's formula counts every run).\n"
            "What runs is counted in the executed FLOPs (HFU's) and the time: with\n"
            ".B \\-\\-attention=flash\n"
            "the fused kernels skip the tiles of 128 x 128 above the diagonal\n"
            "(FlashAttention\\-2, Dao 2023) and execute the rest whole, those on the\n"
            "diagonal included: for n = s / 128 tiles a side, n (n + 1) / 2 of n^2, i.e.\n"
            "half of full plus the diagonal tiles' share 1/(2n) (a last, partial tile\n"
            "counted as it is); materialized attention (Megatron\\-LM's products and\n"
            "fused scale\\-mask\\-softmax) does the whole s x s work and keeps the whole\n"
            "s x s probabilities either way.\n"},
    {"ffn-kind", SL_OPT_FFN_KIND, SL_KT_WORD, NULL, 0, 0, NULL, "gelu, swiglu", MODELS, S | SHAPE,
     SL_KG_MODEL, MO(ffn_kind), SL_KC_INT, NULL, 0,
     "the MLP: GeLU, or SwiGLU's gate and up products of F\ncolumns each, as Llama's "
     "(default gelu)",
     .man = "The MLP: GeLU of one fc1 of F columns, or SwiGLU (Shazeer 2020, as Llama's):\n"
            "gate and up products of F columns each, stored as column pairs so that\n"
            "tensor parallelism splits whole pairs, and silu(gate) times up into fc2\n"
            "(default gelu).\n"},
    {"norm", SL_OPT_NORM, SL_KT_WORD, NULL, 0, 0, NULL, "none, layernorm, rmsnorm", MODELS,
     S | SHAPE, SL_KG_MODEL, MO(norm), SL_KC_INT, NULL, 0,
     "a norm before each sub-block, as GPT's (layernorm) or\nLlama's (rmsnorm), without scale "
     "and shift (default\nnone)",
     .man = "A norm of each row before each sub\\-block (pre\\-normalisation, as GPT\\-2's\n"
            "and Megatron\\-LM's blocks): a layer norm (Ba et al. 2016), or an RMS norm\n"
            "(Zhang and Sennrich 2019, as Llama's), eps 1e\\-5, without the learnable\n"
            "scale and shift (so a layer norm has 2h parameters fewer than\n"
            "Megatron\\-LM's, an RMS norm h fewer).\n"
            "Each sub\\-block keeps the norm's input and its output for the backward\n"
            "pass (with sequence parallelism, the device's rows of both: every TP rank\n"
            "normalises its own rows); the norm is a memory\\-bound kernel forward and\n"
            "one backward (default none; the shipped model files set theirs).\n"},
    {"vocab", SL_OPT_VOCAB, SL_KT_INT, "V", 0, SL_MODEL_MAX_VOCAB, NULL, NULL, MODELS, S | SHAPE,
     SL_KG_MODEL, MO(vocab), SL_KC_INT, NULL, 0,
     "token embeddings and an LM head over V tokens,\nvocabulary-parallel over TP as "
     "Megatron-LM's: timed and\nheld in memory, not computed, so plan and --dry-run only\n"
     "(default 0: the blocks alone)",
     .man = "Token embeddings and an LM head over V words (default 0: the blocks alone),\n"
            "vocabulary\\-parallel over the TP group as Megatron\\-LM's: each TP rank holds\n"
            "ceil(V/t) rows of the table (the vocabulary padded to a multiple of t).\n"
            "The first stage looks the tokens up and sums the ranks' parts (an\n"
            "all\\-reduce, then the learned positions added; a reduce\\-scatter into each\n"
            "rank's rows with sequence parallelism and rotary positions, as\n"
            "Megatron\\-LM's LanguageModelEmbedding), then drops the hidden dropout's\n"
            "share (its mask kept); the last runs the final norm, the LM head's product\n"
            "of V/t logits a row and the vocabulary\\-parallel cross entropy in fp32 (the\n"
            "logits cast up), whose maxima, sums and target logits are three\n"
            "all\\-reduces of a value a row, and keeps the fp32 softmax for the backward\n"
            "pass.\n"
            "The head's 6 B s h V FLOPs count in the model's FLOPs (MFU) as in Narayanan\n"
            "et al. 2021; it is not recomputed.\n"
            "Parameters: V h (the LM head tied to the table, a copy on each end of a\n"
            "pipeline, as Megatron\\-LM keeps one), 2 V h with\n"
            ".BR \\-\\-untie\\-embeddings ,\n"
            "plus s h learned positions, replicated over TP, on the first stage.\n"
            "They are timed, held in memory and updated, never computed: a run that\n"
            "computes values refuses\n"
            ".B \\-\\-vocab\n"
            "(use\n"
            ".B \\-\\-dry\\-run\n"
            "or\n"
            ".BR plan ).\n"
            "Not timed: the all\\-reduce of the tied table's gradient between the first\n"
            "and last stage (about 6 ms of GPT\\-3's 22 s step on A100s).\n"},
    {"untie-embeddings", SL_OPT_UNTIE, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, MODELS, S | SHAPE,
     SL_KG_MODEL, MO(untie), SL_KC_INT, NULL, 0,
     "the LM head has its own weights, as Llama's (default:\ntied to the embedding, as GPT's)",
     .man = "The LM head has its own weights, as Llama's, or (the default) shares the\n"
            "embedding table's, as GPT's; either overrides a model file's.\n"},
    {"tie-embeddings", SL_OPT_TIE, SL_KT_FLAG, NULL, 1, 0, NULL, NULL, MODELS, S | SHAPE,
     SL_KG_MODEL, MO(untie), SL_KC_INT, NULL, 0,
     "the LM head shares the embedding's weights (over a model\nfile's)", NULL},
    {"position-embedding", SL_OPT_POS_EMB, SL_KT_WORD, NULL, 0, 0, NULL, "learned, rope", MODELS,
     S | SHAPE, SL_KG_MODEL, MO(pos_emb), SL_KC_INT, NULL, 0,
     "learned positions (s x h parameters, GPT's) or rotary\nones (none, Llama's; default "
     "learned)",
     .man = ".B learned\n"
            "(s x h parameters on the first stage, as GPT's; the default) or\n"
            ".B rope\n"
            "(rotary positions, as Llama's: no parameters; their element\\-wise work on Q\n"
            "and K is not timed).\n"},
    {"attention-dropout", SL_OPT_ATTN_DROPOUT, SL_KT_REAL, "R", 0, 0.9, "0 to 0.9", NULL, MODELS, S,
     SL_KG_MODEL, MO(attn_dropout), SL_KC_FLOAT, NULL, 0,
     "drop this share of the attention probabilities in\ntraining, as Megatron-LM's option "
     "(default 0)",
     .man = "Drop the share R (0 to 0.9) of the attention probabilities in training and\n"
            "scale the rest by 1/(1 \\- R), as Megatron\\-LM's option of that name (its\n"
            "default 0.1; shardlab's 0).\n"
            "Which ones is a function of the seed, the step, the block, the sequence,\n"
            "the head and the element, so every layout drops what one device drops and\n"
            "the check against it still holds.\n"
            "With the scores in device memory\n"
            ".RB ( \\-\\-attention=materialized )\n"
            "the dropped probabilities and the mask (a byte each) are kept for the\n"
            "backward pass and the dropout is two memory\\-bound kernels; fused attention\n"
            "drops on chip, at no cost in memory or time.\n"},
    {"hidden-dropout", SL_OPT_HIDDEN_DROPOUT, SL_KT_REAL, "R", 0, 0.9, "0 to 0.9", NULL, MODELS, S,
     SL_KG_MODEL, MO(hidden_dropout), SL_KC_FLOAT, NULL, 0,
     "drop this share of each attention and MLP output before\nits residual, as Megatron-LM's "
     "option (default 0)",
     .man = "Drop the share R (0 to 0.9) of each attention and MLP output (after its\n"
            "bias, before the residual) in training and scale the rest by 1/(1 \\- R), as\n"
            "Megatron\\-LM's option of that name (its default 0.1; shardlab's 0).\n"
            "Which ones is a function of the seed, the step, the block, the sub\\-block,\n"
            "and the element's row and column in the global batch, so every layout,\n"
            "sequence\\-parallel shard and recomputation drops what one device drops.\n"
            "Each sub\\-block keeps its mask (a byte an element of its rows: divided by t\n"
            "with sequence parallelism) for the backward pass.\n"
            "Forward, the dropout is part of the one kernel that adds the bias and the\n"
            "residual (as Megatron\\-LM's fused bias_dropout_add), which then also writes\n"
            "the mask; backward, it is one memory\\-bound kernel per sub\\-block.\n"},
    {"grad-accumulation", SL_OPT_GRAD_ACCUM, SL_KT_WORD, NULL, 0, 0, NULL, "fused, separate",
     MODELS, S, SL_KG_MODEL, MO(grad_accum), SL_KC_INT, NULL, 0,
     "each weight-gradient product adds into the gradients\n(fused, default), or writes its own "
     "that a memory pass\nthen adds, every micro-batch (separate: PyTorch's\nautograd, "
     "Megatron-LM before the fusion); time and\nworkspace only",
     .man = "How each linear layer's weight gradient is added up over the micro\\-batches\n"
            "of a step.\n"
            ".B fused\n"
            "(the default): the weight\\-gradient product adds into the gradient array\n"
            "itself, as Megatron\\-LM's gradient\\-accumulation fusion (in NVIDIA apex's\n"
            "copy of Megatron's layers since February 2022) and today's frameworks do.\n"
            ".BR separate :\n"
            "the product writes the gradient into a buffer of its own, which a\n"
            "memory\\-bound kernel then adds into the array (it reads both and writes\n"
            "the array), every micro\\-batch, as PyTorch's autograd and Megatron\\-LM's\n"
            "data\\-parallel hook did before that fusion (the LM head is such a layer;\n"
            "the embedding table's own gradient is charged in neither mode).\n"
            "The values are the same; only the time (on a realistic machine) and the\n"
            "workspace differ.\n"
            ".B make validate\n"
            "runs the 2021 Megatron\\-LM rows with it.\n"},
    {"seq", SL_OPT_SEQ, SL_KT_INT, "S", 1, SL_MODEL_MAX_SEQ, NULL, NULL, MODELS, S | SHAPE,
     SL_KG_MODEL, MO(seq), SL_KC_INT, NULL, 0,
     "tokens per sequence (default 32; 1 without attention\nunless given)", NULL},
    {"batch", SL_OPT_BATCH, SL_KT_INT, "B", 1, 1 << 20, NULL, NULL, MODELS, S | SHAPE, SL_KG_MODEL,
     MO(batch), SL_KC_INT, NULL, 0, "sequences per step, over all replicas (default 16)",
     .man = "Sequences per step over all replicas (default 16).\n"},
    {"steps", SL_OPT_STEPS, SL_KT_INT, "N", 1, 100000, NULL, NULL, SL_CMD_TRAIN | SL_CMD_COMPARE, S,
     SL_KG_MODEL, SL_KP_STEPS, 0, SL_KC_INT, NULL, 0,
     "training steps (default 5; compare: 3; a lesson: 1)",
     .man = "Training steps (default 5 for train, 3 for compare).\n"},
    {"lr", SL_OPT_LR, SL_KT_REAL, "X", 0, 1, "between 0 and 1", NULL,
     SL_CMD_TRAIN | SL_CMD_COMPARE | SL_CMD_SANDBOX, S | SL_KF_OPEN, SL_KG_MODEL, MO(lr),
     SL_KC_FLOAT, NULL, 0, "Adam's learning rate (default 0.001)",
     .man = "Adam's learning rate (default 0.001).\n"},
    /* ---- a collective ---- */
    {"op", SL_OPT_OP, SL_KT_WORD, "OP", 0, 0, NULL,
     "allreduce, allgather, reducescatter, broadcast, reduce, gather, scatter, alltoall, "
     "sendrecv",
     SL_CMD_COLL, S, SL_KG_COLL, NONE, SL_KC_INT, NULL, 0,
     "allreduce (default), allgather, reducescatter,\nbroadcast, reduce, gather, scatter "
     "(root: device 0),\nalltoall, sendrecv (to the next device; both out of\nplace, whatever "
     "--algorithm)",
     .man = ".B allreduce\n"
            "(the default),\n"
            ".BR allgather ,\n"
            ".BR reducescatter ,\n"
            ".BR broadcast ,\n"
            ".BR reduce ,\n"
            ".BR gather ,\n"
            ".B scatter\n"
            "(the root of the rooted ones is device 0),\n"
            ".B alltoall\n"
            "(block\n"
            ".I b\n"
            "of device\n"
            ".IR r 's\n"
            "buffer to block\n"
            ".I r\n"
            "of device\n"
            ".IR b 's,\n"
            "pairwise in\n"
            ".IR p \\-1\n"
            "steps: (p\\-1)(alpha + N/(p B)); the size is rounded down to\n"
            ".I p\n"
            "whole blocks) or\n"
            ".B sendrecv\n"
            "(the whole buffer to the next device, from the previous, in one step:\n"
            "alpha + N/B).\n"
            "The last two are out of place (a receive buffer beside the send buffer, each\n"
            "of\n"
            ".I SIZE\n"
            "bytes) and point to point whatever\n"
            ".BR \\-\\-algorithm .\n"},
    {"bytes", SL_OPT_BYTES, SL_KT_TEXT, "SIZE|MIN:MAX", 0, 0, NULL, NULL, SL_CMD_COLL, S,
     SL_KG_COLL, NONE, SL_KC_INT, NULL, 0,
     "one size, or -b MIN -e MAX (a lesson: one size, 4 B to\n1 PiB, whole fp32 elements; "
     "default 64MiB)",
     .man = "One buffer size, or\n"
            ".B \\-b\n"
            ".I MIN\n"
            ".B \\-e\n"
            ".IR MAX .\n"},
    {"minbytes", 'b', SL_KT_BYTES, "SIZE", 4, 1125899906842624.0, "4 B to 1 PiB", NULL, SL_CMD_COLL,
     0, SL_KG_COLL, NONE, SL_KC_INT, NULL, 'b', "the first size (default 1MiB)",
     .man = "The first size (default 1MiB); at least 4 B.\n"},
    {"maxbytes", 'e', SL_KT_BYTES, "SIZE", 4, 1125899906842624.0, "4 B to 1 PiB", NULL, SL_CMD_COLL,
     0, SL_KG_COLL, NONE, SL_KC_INT, NULL, 'e', "the last size at most (default 64MiB)",
     .man = "The last size at most (default 64MiB).\n"},
    {"stepfactor", 'f', SL_KT_INT, "N", 2, 1024, NULL, NULL, SL_CMD_COLL, 0, SL_KG_COLL, NONE,
     SL_KC_INT, NULL, 'f', "each size N times the last (default 2)",
     .man = "Each size is the previous one times\n"
            ".I N\n"
            "(2 to 1024, default 2).\n"},
    {"iters", 'n', SL_KT_INT, "N", 1, 1000, NULL, NULL, SL_CMD_COLL, 0, SL_KG_COLL, NONE, SL_KC_INT,
     NULL, 'n', "iterations per size, 1 to 1000 (default 1); time is\nper iteration",
     .man = "Run each size\n"
            ".I N\n"
            "times (1 to 1000, default 1) in one run, each iteration from the same data;\n"
            "the time is the total divided by\n"
            ".IR N .\n"
            "In model timing every iteration takes the same time.\n"},
    {"predicted", SL_OPT_PREDICTED, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_COLL, 0, SL_KG_COLL,
     NONE, SL_KC_INT, NULL, 0, "a 14th column: the alpha-beta model's predicted time\n(us)",
     .man = "A 14th column after nccl\\-tests' 13: the alpha\\-beta model's predicted time\n"
            "(microseconds).\n"},
    {"human", SL_OPT_HUMAN, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_COLL, 0, SL_KG_COLL, NONE,
     SL_KC_INT, NULL, 0, "the table in units (1.00 MiB, 15.5 us, 67.7 GB/s)",
     .man = "The table in human units, without the footer.\n"
            ".PP\n"
            "Long options must be spelled out in full; a value follows\n"
            ".B =\n"
            "or comes as the next argument.\n"
            "The buffers of all emulated devices live in the host's memory: a run that\n"
            "would need more than half of it is refused.\n"},
    /* ---- compare ---- */
    {"layouts", SL_OPT_LAYOUTS, SL_KT_TEXT, "LIST", 0, 0, NULL, NULL, SL_CMD_COMPARE, 0,
     SL_KG_COMPARE, NONE, SL_KC_INT, NULL, 0,
     "comma-separated TxPxD, each optionally followed by\n:gpipe, :1f1b, :interleaved, :sp or "
     ":zero1\n(e.g. 1x1x1,4x1x1,1x4x1:gpipe,2x1x2:sp:zero1)",
     .man = "Comma\\-separated\n"
            ".IR T x P x D ,\n"
            "each optionally followed by\n"
            ".BR :gpipe ,\n"
            ".BR :1f1b ,\n"
            ".BR :interleaved ,\n"
            ".B :sp\n"
            "or\n"
            ".B :zero1\n"
            "(for example 1x1x1,1x4x1:gpipe,2x1x2:sp:zero1).\n"
            ".B \\-\\-schedule\n"
            "and\n"
            ".B \\-\\-microbatches\n"
            "apply to the default layouts.\n"},
    {"side-by-side", SL_OPT_SIDE_BY_SIDE, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_COMPARE, 0,
     SL_KG_COMPARE, NONE, SL_KC_INT, NULL, 0,
     "show up to three layouts on one time axis, full screen\n(default: tp, pp and dp over "
     "--devices); with\n--snapshot, write that screen instead",
     .man = "Instead of the table, show up to three layouts full screen on one time axis\n"
            "(by default tensor, pipeline and data parallel over\n"
            ".BR \\-\\-devices ):\n"
            "a band per layout with each device's compute, communication and waiting\n"
            "over the last training step (a row of several devices, when they outnumber\n"
            "the rows, shows what took most of their time), the step time, the peak\n"
            "memory and the bytes sent per device, and a bar of each device's memory:\n"
            "parameters, gradients, optimizer state, activations and workspace.\n"
            "With\n"
            ".BR \\-\\-snapshot ,\n"
            "the screen is written to a file instead (no terminal needed).\n"},
    /* ---- train's checkpoints, trace and report ---- */
    {"save", SL_OPT_SAVE, SL_KT_TEXT, "DIR", 0, 0, NULL, NULL, SL_CMD_TRAIN, 0, SL_KG_CKPT, NONE,
     SL_KC_INT, NULL, 0, "save the training state after the last step",
     .man = "Save the training state (parameters, Adam's moments and step) into\n"
            ".I DIR\n"
            "after the last step, written by the devices; see\n"
            ".BR CHECKPOINTS .\n"
            ".I DIR\n"
            "must be missing (in an existing directory), an empty directory, or a\n"
            "checkpoint, which the save replaces crash\\-safely (see\n"
            ".BR CHECKPOINTS ).\n"
            "With\n"
            ".BR \\-\\-trace ,\n"
            "the trace then holds the final save (which device wrote which chunk) rather\n"
            "than the training steps.\n"},
    {"save-every", SL_OPT_SAVE_EVERY, SL_KT_INT, "N", 1, 100000, NULL, NULL, SL_CMD_TRAIN, 0,
     SL_KG_CKPT, NONE, SL_KC_INT, NULL, 0, "... and every N steps (each save replaces the last)",
     .man = "Also save every\n"
            ".I N\n"
            "steps (each save replaces the previous one).\n"},
    {"load", SL_OPT_LOAD, SL_KT_TEXT, "DIR", 0, 0, NULL, NULL, SL_CMD_TRAIN, 0, SL_KG_CKPT, NONE,
     SL_KC_INT, NULL, 0,
     "resume from a checkpoint, under this layout or another;\nmodel options not given come "
     "from it (the losses are\nchecked against one device resumed from it)",
     .man = "Resume from a checkpoint, under this command's layout: the devices read the\n"
            "stored chunks their shards need, checked before anything changes.\n"
            "Model options not given come from the checkpoint; an architecture option\n"
            "that differs is refused, and so are a\n"
            ".BR \\-\\-seq ,\n"
            ".BR \\-\\-batch ,\n"
            ".BR \\-\\-seed ,\n"
            ".BR \\-\\-lr ,\n"
            ".B \\-\\-attention\\-dropout\n"
            "or\n"
            ".B \\-\\-hidden\\-dropout\n"
            "that differ (a resumed run is exact only with the same data, optimizer and\n"
            "dropout).\n"
            ".B \\-\\-grad\\-accumulation\n"
            "is not stored: it changes only time and workspace, and a resumed run uses\n"
            "the one given (fused unless given).\n"
            "Steps are numbered on from the saved step, and the reference is one device\n"
            "resumed from the same checkpoint (never a replay of the whole history), so\n"
            "the check tests that the new layout continues exactly where one device\n"
            "would.\n"},
    {"load", SL_OPT_LOAD, SL_KT_TEXT, "DIR", 0, 0, NULL, NULL, SL_CMD_SANDBOX, 0, SL_KG_LOAD, NONE,
     SL_KC_INT, NULL, 0,
     "show DIR (saved by train --save) resharded to the layout\nof --tp, --pp and --dp (each "
     "defaults to the saved one):\nwhich device reads which stored chunk and keeps what,\nthen "
     "which writes which new chunk (the model is DIR's)",
     .man = "Show the checkpoint in\n"
            ".I DIR\n"
            "(written by\n"
            ".BR \"train \\-\\-save\" )\n"
            "resharded to the layout of\n"
            ".BR \\-\\-tp ,\n"
            ".B \\-\\-pp\n"
            "and\n"
            ".B \\-\\-dp\n"
            "(each defaults to the saved one), on that layout's devices, as\n"
            ".B ckpt reshard\n"
            "does it: every device reads the stored chunks its new shards overlap, then\n"
            "writes its own new chunks.\n"
            "The devices show\n"
            ".B read\n"
            "and\n"
            ".BR write ;\n"
            "the matrices panel shows block 0's QKV (by heads), fc1 (column\\-parallel),\n"
            "fc2 (row\\-parallel) and fc2's bias (replicated), stored on the left in the\n"
            "colours of the devices that saved each chunk and, on the right, under the new\n"
            "layout: arriving while a device reads, held once read, solid once written;\n"
            "each step's sentence names the chunk, who saved it and what the reader keeps.\n"
            "The model is the checkpoint's (model options are refused).\n"},
    {"trace-steps", SL_OPT_TRACE_STEPS, SL_KT_TEXT, "N[-M]", 0, 0, NULL, NULL, SL_CMD_TRAIN, 0,
     SL_KG_TRACE, NONE, SL_KC_INT, NULL, 0, "keep only these training steps (from 1) in the trace",
     .man = "With\n"
            ".BR \\-\\-trace ,\n"
            "keep only what the devices do inside training steps\n"
            ".I N\n"
            "to\n"
            ".I M\n"
            "(from 1) in the trace.\n"},
    {"trace-devices", SL_OPT_TRACE_DEVICES, SL_KT_TEXT, "LIST", 0, 0, NULL, NULL, SL_CMD_TRAIN, 0,
     SL_KG_TRACE, NONE, SL_KC_INT, NULL, 0, "keep only these devices, e.g. 0-7,16 (from 0)",
     .man = "With\n"
            ".BR \\-\\-trace ,\n"
            "keep only these devices (from 0; ranges and single devices separated by\n"
            "commas, such as\n"
            ".BR 0\\-7,16 ,\n"
            "at most 8).\n"
            "The run computes and times the same whatever the trace keeps; without\n"
            ".B \\-\\-trace\n"
            "a run keeps no event at all, so a timing\\-only run's host memory does not grow\n"
            "with its events.\n"
            ".PP\n"
            "The report gives, besides the step time, the throughput as\n"
            ".B plan\n"
            "and Megatron\\-LM's logs give it: tokens per second (the batch's tokens over the\n"
            "step) in all and per device, the model's FLOP/s per device (forward and\n"
            "backward, as MFU counts them) and MFU and HFU, over the device's peak\n"
            ".RB ( tokens_per_s \", \" device_tokens_per_s \", \" device_model_flop_per_s ,\n"
            ".BR device_hardware_flop_per_s \", \" mfu \" and \" hfu\n"
            "in JSON).\n"
            "The model's FLOPs count a causal head's s x s products at half, as\n"
            "FlashAttention's benchmarks do, and whole with\n"
            ".B \\-\\-mask=full\n"
            "(Narayanan et al. 2021's count); the hardware's count what ran\n"
            ".RB ( \\-\\-mask ).\n"
            ".PP\n"
            "The text report prints each step's row as the step ends.\n"
            "When stderr is a terminal,\n"
            ".BR train \" and \" plan\n"
            "keep a progress line there (what is being done, how far, the time left),\n"
            "cleared when they end;\n"
            ".B SHARDLAB_PROGRESS=0\n"
            "turns it off.\n"},
    {"per-device", SL_OPT_PER_DEVICE, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_TRAIN, 0,
     SL_KG_REPORT, NONE, SL_KC_INT, NULL, 0,
     "every device's row in the text report (beyond 32\ndevices, devices with the same figures "
     "share one)",
     .man = "List every device in the text report's per\\-device tables.\n"
            "Beyond 32 devices, consecutive devices with the same figures otherwise share\n"
            "a row (\\fB8\\-15\\fR in the device column, \\fB*\\fR for a mesh coordinate\n"
            "they do not share).\n"},
    /* ---- plan ---- */
    {"no-sequence-parallel", SL_OPT_NO_SP, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_PLAN, 0,
     SL_KG_PLAN, NONE, SL_KC_INT, NULL, 0, "only layouts without sequence parallelism",
     .man = "Only layouts without sequence parallelism.\n"},
    {"no-zero1", SL_OPT_NO_ZERO1, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_PLAN, 0, SL_KG_PLAN,
     NONE, SL_KC_INT, NULL, 0,
     "only layouts without ZeRO (Adam's state whole on\nevery replica): with the option "
     "above, what\nMegatron-LM had in 2021",
     .man = "Only layouts without ZeRO of any stage (Adam's state whole on every replica).\n"
            "With the option above, the layouts Megatron\\-LM had in 2021, before\n"
            "sequence parallelism (Korthikanti et al. 2022) and its distributed\n"
            "optimizer: what a comparison with a run of that time needs.\n"
            ".PP\n"
            ".B \\-\\-memory\n"
            "sets the device memory layouts must fit in;\n"
            ".B \\-\\-devices\\-per\\-node\n"
            "and the link options set where the node boundary is and what crossing it\n"
            "costs.\n"},
    {"top", SL_OPT_TOP, SL_KT_INT, "K", 0, 1 << 30, NULL, NULL, SL_CMD_PLAN, 0, SL_KG_PLAN, NONE,
     SL_KC_INT, NULL, 0, "rows of the ranked table, 0 for all (default 20)",
     .man = "Rows of the ranked table (default 20; 0 for all).\n"
            "The JSON and CSV reports always list every layout, each that fits timed.\n"
            "The table times only what can rank in it: once\n"
            ".I K\n"
            "rows are timed (at least 3, what the sentences on the best compare), a layout\n"
            "whose compute alone takes longer (its busiest device's, or its pipeline's\n"
            "passes in a chain: the fill, the busiest stage's passes and the drain)\n"
            "than the\n"
            ".IR K th\n"
            "fastest step so far is not replayed (its step cannot be shorter than that\n"
            "compute), which leaves the table as a plan that times every row would print\n"
            "it and takes about half the time for a thousand devices; the report says\n"
            "how many that fit were left untimed.\n"},
    /* ---- ckpt reshard ---- */
    {"out", SL_OPT_OUT, SL_KT_TEXT, "DIR2", 0, 0, NULL, NULL, SL_CMD_RESHARD, 0, SL_KG_RESHARD,
     NONE, SL_KC_INT, NULL, 0, "where to write (missing, empty, or a checkpoint)", NULL},
    {"storage-bandwidth", SL_OPT_STORAGE_BW, SL_KT_RATE, "RATE", 1e3, 1e15, "1 KB/s to 1 PB/s",
     NULL, SL_CMD_RESHARD, 0, SL_KG_RESHARD, NONE, SL_KC_INT, NULL, 0,
     "per-device storage rate for the emulated time of\nreads and writes (default 2GB/s)", NULL},
    /* ---- a lesson's reshard target ---- */
    {"to-tp", SL_OPT_TO_TP, SL_KT_INT, "T", 1, SL_MAX_PLAN_DEVICES, NULL, NULL, 0, S, SL_KG_TARGET,
     NONE, SL_KC_INT, NULL, 0, "the tensor-parallel size a reshard loads under", NULL},
    {"to-pp", SL_OPT_TO_PP, SL_KT_INT, "P", 1, SL_MAX_PLAN_DEVICES, NULL, NULL, 0, S, SL_KG_TARGET,
     NONE, SL_KC_INT, NULL, 0, "the pipeline stages a reshard loads under", NULL},
    {"to-dp", SL_OPT_TO_DP, SL_KT_INT, "D", 1, SL_MAX_PLAN_DEVICES, NULL, NULL, 0, S, SL_KG_TARGET,
     NONE, SL_KC_INT, NULL, 0, "the data-parallel replicas a reshard loads under", NULL},
    /* ---- display ---- */
    {"no-color", SL_OPT_NO_COLOR, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, DISPLAY | SL_CMD_COMPARE, 0,
     SL_KG_DISPLAY, NONE, SL_KC_INT, NULL, 0, "monochrome (so is a non-empty NO_COLOR)",
     .man = "Monochrome: states and devices keep their glyphs, words and digits.\n"
            "A non\\-empty\n"
            ".B NO_COLOR\n"
            "does the same.\n"},
    {"ascii", SL_OPT_ASCII, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, DISPLAY | SL_CMD_COMPARE, 0,
     SL_KG_DISPLAY, NONE, SL_KC_INT, NULL, 0, "ASCII glyphs (so is a locale that is not UTF-8)",
     .man = "ASCII glyphs only; also the default when the locale is not UTF\\-8.\n"},
    {"high-contrast", SL_OPT_HIGH_CONTRAST, SL_KT_FLAG, NULL, 0, 1, NULL, NULL,
     DISPLAY | SL_CMD_COMPARE, 0, SL_KG_DISPLAY, NONE, SL_KC_INT, NULL, 0,
     "the high-contrast palette, for projectors (key c)",
     .man = "The high\\-contrast palette, for washed\\-out projectors (the\n"
            ".B c\n"
            "key switches it).\n"},
    {"presenter", SL_OPT_PRESENTER, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_LESSON, 0,
     SL_KG_DISPLAY, NONE, SL_KC_INT, NULL, 0,
     "presenter mode, for a projector: the narration without\nits setup, run, result and "
     "passing check lines, and no\nscores (key p switches it; shardlab --presenter opens\nthe "
     "menu so)",
     NULL},
    {"no-mouse", SL_OPT_NO_MOUSE, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_SANDBOX, 0,
     SL_KG_DISPLAY, NONE, SL_KC_INT, NULL, 0, "leave the mouse to the terminal",
     .man = "Leave the mouse to the terminal (else a click selects a device or a link).\n"},
    {"play", SL_OPT_PLAY, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_SANDBOX, 0, SL_KG_DISPLAY,
     NONE, SL_KC_INT, NULL, 0, "start playing at once", .man = "Start playing at once.\n"},
    {"fps", SL_OPT_FPS, SL_KT_INT, "N", 1, 60, NULL, NULL, SL_CMD_SANDBOX, 0, SL_KG_DISPLAY, NONE,
     SL_KC_INT, NULL, 0, "frames per second while animating, 1 to 60 (default\n25)",
     .man = "Frames per second while animating, 1 to 60 (default 25).\n"
            "Nothing is redrawn while paused.\n"},
    {"snapshot", SL_OPT_SNAPSHOT, SL_KT_TEXT, "FILE", 0, 0, NULL, NULL, DISPLAY | SL_CMD_COMPARE, 0,
     SL_KG_DISPLAY, NONE, SL_KC_INT, NULL, 0,
     "no terminal needed: draw the first screen off screen,\nwrite it to FILE as SVG (and FILE.txt "
     "as text; a\nFILE "
     "ending in .txt: text only), and leave",
     .man = "Draw the first screen on an off\\-screen terminal (no terminal is needed), write\n"
            "it to\n"
            ".I FILE\n"
            "as SVG (monospace text in the cells' colours) and as plain text to\n"
            ".IR FILE .txt,\n"
            "and leave; a\n"
            ".I FILE\n"
            "ending in\n"
            ".B .txt\n"
            "gets the text only.\n"
            "The screen is\n"
            ".B LINES\n"
            "by\n"
            ".B COLUMNS\n"
            "when both are set, else the terminal's size, else 30 by 100.\n"
            "On the screen, the key\n"
            ".B F12\n"
            "(or\n"
            ".BR S )\n"
            "writes the screen shown as\n"
            ".BI shardlab\\- N .svg\n"
            "in the working directory.\n"},
    /* ---- lesson ---- */
    {"start", SL_OPT_START, SL_KT_TEXT, "LABEL|LINE", 0, 0, NULL, NULL, SL_CMD_LESSON, 0,
     SL_KG_LESSON, NONE, SL_KC_INT, NULL, 0, "begin at a label or a line (for authors)",
     .man = "Begin at a label or a line of the lesson.\n"},
    {"fresh", SL_OPT_FRESH, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_LESSON, 0, SL_KG_LESSON,
     NONE, SL_KC_INT, NULL, 0, "forget the progress kept and start at the top",
     .man = "Forget the progress kept and start at the top.\n"},
    {"headless", SL_OPT_HEADLESS, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_LESSON, 0,
     SL_KG_LESSON, NONE, SL_KC_INT, NULL, 0, "print the lesson, read answers from stdin",
     .man = "Print the lesson and read answers from standard input (see\n"
            ".BR lesson ).\n"},
    {"resume", SL_OPT_RESUME, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_LESSON, 0, SL_KG_LESSON,
     NONE, SL_KC_INT, NULL, 0, "(headless) go on where the learner left off",
     .man = "With\n"
            ".B \\-\\-headless\n"
            "only: go on where the learner left off, keep no progress, play it through.\n"},
    {"no-save", SL_OPT_NO_SAVE, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_LESSON, 0, SL_KG_LESSON,
     NONE, SL_KC_INT, NULL, 0, "(headless) keep no progress", NULL},
    {"demo", SL_OPT_DEMO, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_LESSON, 0, SL_KG_LESSON, NONE,
     SL_KC_INT, NULL, 0, "(headless) play it through, answering by itself", NULL},
    {"run", SL_OPT_CHECK_RUN, SL_KT_FLAG, NULL, 0, 1, NULL, NULL, SL_CMD_CHECK, 0, SL_KG_LESSON,
     NONE, SL_KC_INT, NULL, 0,
     "(check) also play each lesson through, answering\nby itself, and report every check or "
     "claim in prose\nits runs contradict",
     .man = "Also play each lesson through, as\n"
            ".B lesson \\-\\-headless \\-\\-demo\n"
            "does (its runs are emulated, so the result is the same on every machine), and\n"
            "report every check, and every claim made in prose\n"
            "(\\fB{? CONDITION}\\fP), that its runs contradict, as FILE:LINE: message.\n"},
};

#define NKNOBS ((int)(sizeof table / sizeof table[0]))

static const char *const group_titles[SL_KG_N] = {
    [SL_KG_LESSON] = "Lesson:",
    [SL_KG_COLL] = "Collective:",
    [SL_KG_COMPARE] = "Layouts:",
    [SL_KG_WORKLOAD] = "Workload: Y[m,n] = X[m,k] W[k,n]",
    [SL_KG_LAYOUT] = "Layout (devices: tp*cp*pp*dp unless --devices is given):",
    [SL_KG_MODEL] = ("Model (L blocks of width h: multi-head attention when --heads > 0, "
                     "then an MLP):"),
    [SL_KG_CKPT] = "Checkpoints (see shardlab ckpt --help):",
    [SL_KG_TRACE] = "Trace (with --trace; the run computes and times the same):",
    [SL_KG_REPORT] = "Report:",
    [SL_KG_RESHARD] = "Reshard options:",
    [SL_KG_LOAD] = "Resharding a checkpoint:",
    [SL_KG_PLAN] = "Plan:",
    [SL_KG_CLUSTER] = "Cluster (a preset first, then any explicit figure over it):",
    [SL_KG_OUTPUT] = "Output:",
    [SL_KG_DRY_RUN] = "Timing only:",
    [SL_KG_DISPLAY] = "Display:",
    [SL_KG_TARGET] = "A lesson's reshard target:",
};

const sl_knob *sl_knobs(void)
{
	return table;
}

int sl_knob_count(void)
{
	return NKNOBS;
}

int sl_knob_index(const sl_knob *k)
{
	return (int)(k - table);
}

const sl_knob *sl_knob_of(int code)
{
	for (int i = 0; i < NKNOBS; i++)
		if (table[i].code == code)
			return &table[i];
	return NULL;
}

const sl_knob *sl_knob_named(const char *name, unsigned cmds)
{
	for (int i = 0; i < NKNOBS; i++)
		if ((!cmds || (table[i].cmds & cmds)) &&
		    (strcmp(table[i].name, name) == 0 ||
		     (table[i].alias && strcmp(table[i].alias, name) == 0)))
			return &table[i];
	return NULL;
}

const char *sl_knob_group_title(sl_knob_group g)
{
	return g >= 0 && g < SL_KG_N ? group_titles[g] : "";
}

const char *sl_knob_choices(const sl_knob *k)
{
	static char algos[160];
	if (k->code == SL_OPT_ALGORITHM) {
		if (!algos[0])
			sl_algo_list(algos, sizeof algos, ", ");
		return algos;
	}
	return k->choices ? k->choices : "";
}

void sl_knob_column(const sl_knob *k, char *buf, size_t n)
{
	char words[160] = "";
	if (k->type == SL_KT_WORD) {
		size_t w = 0;
		for (const char *c = sl_knob_choices(k); *c && w + 1 < sizeof words; c++)
			if (*c == ',')
				words[w++] = '|';
			else if (*c != ' ')
				words[w++] = *c;
		words[w] = '\0';
	}
	if (k->shortopt)
		snprintf(buf, n, "-%c, --%s=%s", k->shortopt, k->name, k->meta);
	else if (k->type == SL_KT_FLAG)
		snprintf(buf, n, "--%s", k->name);
	else
		snprintf(buf, n, "--%s=%s", k->name, k->meta ? k->meta : words);
}

/* The word's index in the comma-separated list, or -1. */
static int word_index(const char *list, const char *w)
{
	size_t len = strlen(w);
	int i = 0;
	for (const char *p = list; *p; i++) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == len && strncmp(p, w, len) == 0)
			return i;
		if (!e)
			break;
		p = e + 1;
		while (*p == ' ')
			p++;
	}
	return -1;
}

static int out_of_range(const sl_knob *k, const char *prefix, const char *arg, sl_err *err)
{
	if (k->range)
		return sl_fail(err, SL_EINVAL, "%s%s=%s is out of range (%s)", prefix, k->name, arg,
		               k->range);
	return sl_fail(err, SL_EINVAL, "%s%s=%s is out of range (%.0f to %.0f)", prefix, k->name,
	               arg, k->lo, k->hi);
}

int sl_knob_parse(const sl_knob *k, const char *prefix, const char *arg, sl_knob_val *v,
                  sl_err *err)
{
	sl_err e = {0};
	int rc = SL_OK;
	v->s = arg ? arg : "";
	v->d = 0;
	if (k->type == SL_KT_FLAG) {
		/* The command line's flag has no value: yes. */
		if (!arg || strcmp(arg, "yes") == 0)
			v->d = 1;
		else if (strcmp(arg, "no") != 0)
			return sl_fail(err, SL_EINVAL, "%s%s: '%s' is not yes or no", prefix,
			               k->name, arg);
		return SL_OK;
	}
	if (!arg || !*arg)
		return sl_fail(err, SL_EINVAL, "%s%s needs a value: %s%s=%s", prefix, k->name,
		               prefix, k->name, k->meta ? k->meta : "VALUE");
	switch (k->type) {
	case SL_KT_WORD: {
		const char *choices = sl_knob_choices(k);
		int i = word_index(choices, arg);
		if (i < 0) {
			char near[64];
			if (sl_closest_in(arg, choices, near, sizeof near))
				return sl_fail(
				    err, SL_EINVAL,
				    "%s%s: unknown value '%s': did you mean '%s'? (one of: %s)",
				    prefix, k->name, arg, near, choices);
			return sl_fail(err, SL_EINVAL, "%s%s: unknown value '%s' (one of: %s)",
			               prefix, k->name, arg, choices);
		}
		v->d = i;
		return SL_OK;
	}
	case SL_KT_TEXT:
		return SL_OK;
	case SL_KT_INT: {
		long l;
		if (sl_parse_int(arg, -2147483647L, 2147483647L, "", &l, &e))
			return sl_fail(err, SL_EINVAL,
			               "%s%s: '%s' is not a whole number (decimal digits only)",
			               prefix, k->name, arg);
		v->d = (double)l;
		break;
	}
	case SL_KT_REAL:
		rc = sl_parse_double(arg, &v->d, &e);
		break;
	case SL_KT_RATE:
		rc = sl_parse_rate(arg, &v->d, &e);
		break;
	case SL_KT_TIME:
		rc = sl_parse_time(arg, &v->d, &e);
		break;
	case SL_KT_BYTES:
		rc = sl_parse_bytes(arg, &v->d, &e);
		break;
	case SL_KT_FLOPS:
		rc = sl_parse_flops(arg, &v->d, &e);
		break;
	case SL_KT_FLAG:
		break;
	}
	if (rc)
		return sl_fail(err, SL_EINVAL, "%s%s: %s", prefix, k->name, e.msg);
	/* A unit's quantity of zero where the range starts above it. */
	if (v->d == 0 && k->lo > 0 && k->type != SL_KT_INT && k->type != SL_KT_REAL)
		return sl_fail(err, SL_EINVAL, "%s%s=%s: must be positive", prefix, k->name, arg);
	int inside =
	    (k->flags & SL_KF_OPEN) ? v->d > k->lo && v->d < k->hi : v->d >= k->lo && v->d <= k->hi;
	if (!inside)
		return out_of_range(k, prefix, arg, err);
	return SL_OK;
}

static char *base_of(const sl_knob *k, const sl_knob_dest *d)
{
	switch (k->place) {
	case SL_KP_NONE:
		return NULL;
	case SL_KP_CLUSTER:
		return (char *)d->cluster;
	case SL_KP_GEMM:
		return (char *)d->gemm;
	case SL_KP_MODEL:
		return (char *)d->model;
	case SL_KP_LAYOUT:
		return (char *)d->layout;
	case SL_KP_STEPS:
		return (char *)d->steps;
	}
	return NULL;
}

double sl_knob_load(const sl_knob *k, const sl_knob_dest *d)
{
	const char *base = base_of(k, d);
	if (!base)
		return NAN;
	const void *f = base + k->off;
	double x = 0;
	switch (k->ctype) {
	case SL_KC_INT:
		x = *(const int *)f;
		break;
	case SL_KC_DOUBLE:
		x = *(const double *)f;
		break;
	case SL_KC_FLOAT:
		x = *(const float *)f;
		break;
	case SL_KC_U64:
		x = (double)*(const uint64_t *)f;
		break;
	}
	return k->type == SL_KT_FLAG ? x == k->hi : x;
}

void sl_knob_json_key(const sl_knob *k, char *buf, size_t n)
{
	static const char *const suffix[] = {[SL_KT_RATE] = "_bytes_per_s",
	                                     [SL_KT_TIME] = "_s",
	                                     [SL_KT_BYTES] = "_bytes",
	                                     [SL_KT_FLOPS] = "_flop_per_s"};
	size_t i = 0;
	for (; k->name[i] && i + 1 < n; i++)
		buf[i] = k->name[i] == '-' ? '_' : k->name[i];
	buf[i] = '\0';
	const char *sfx = (size_t)k->type < sizeof suffix / sizeof *suffix ? suffix[k->type] : NULL;
	if (sfx && i < n)
		snprintf(buf + i, n - i, "%s", sfx);
}

int sl_knob_store(const sl_knob *k, const sl_knob_val *v, const sl_knob_dest *d)
{
	char *base = base_of(k, d);
	if (!base)
		return 0;
	double x = v->d;
	if (k->type == SL_KT_FLAG)
		x = v->d ? k->hi : k->lo;
	void *f = base + k->off;
	switch (k->ctype) {
	case SL_KC_INT:
		*(int *)f = (int)x;
		break;
	case SL_KC_DOUBLE:
		*(double *)f = x;
		break;
	case SL_KC_FLOAT:
		*(float *)f = (float)x;
		break;
	case SL_KC_U64:
		*(uint64_t *)f = (uint64_t)x;
		break;
	}
	/* The seed is the product's and the model's. */
	if (k->code == SL_OPT_SEED && d->model)
		d->model->seed = (uint64_t)x;
	return 1;
}
