/* SPDX-License-Identifier: MIT */
/* blasenv.h - give OpenBLAS its settings before it loads. */
#ifndef SL_BLASENV_H
#define SL_BLASENV_H

/* OpenBLAS reads OPENBLAS_CORETYPE in its load-time constructor, so setting
 * it inside main is too late: when it is unset, set it and re-execute this
 * program once.  A core type the
 * user chose is kept; otherwise "auto" (an unknown name) makes OpenBLAS pick
 * its kernel by CPU features instead of by CPU model, which it gets wrong on
 * some machines.  Device threads always run single-threaded BLAS. */
void sl_blasenv_ensure(char **argv);

#endif
