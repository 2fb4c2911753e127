#!/bin/sh
# SPDX-License-Identifier: MIT
# The Vim files: a .lesson buffer gets the shardlab-lesson file type and
# the compiler (makeprg=shardlab check %), and :make puts the checker's
# FILE:LINE: message errors in the quickfix list at the right line.
# make check sets $SHARDLAB and $SHARDLAB_VIMDIR (contrib/vim).
set -u
bin=${SHARDLAB:?}
vimdir=${SHARDLAB_VIMDIR:?}
command -v vim >/dev/null || { echo "SKIP: no vim"; exit 77; }
command -v timeout >/dev/null || { echo "SKIP: no timeout(1)"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
mkdir "$dir/bin"
ln -s "$bin" "$dir/bin/shardlab"
printf 'title T\nminutes 1\nabout A lesson with a bad jump.\n\njump nowhere\n' >"$dir/bad.lesson"
cd "$dir" || exit 1
PATH=$dir/bin:$PATH timeout 60 vim -Nu NONE -i NONE -es --cmd "set rtp^=$vimdir" \
	--cmd 'filetype plugin on' -c 'silent make' -c "redir! > $dir/out" \
	-c 'echo &filetype "|" &makeprg' \
	-c 'for e in getqflist() | if e.valid | echo bufname(e.bufnr) e.lnum e.text | endif | endfor' \
	-c 'redir END' -c 'qa!' bad.lesson >/dev/null 2>&1
fails=0
grep -q '^shardlab-lesson | shardlab check %$' "$dir/out" || { echo "FAIL: file type or makeprg:"; cat "$dir/out"; fails=1; }
grep -q "^bad.lesson 5 jump to unknown label 'nowhere'" "$dir/out" || { echo "FAIL: quickfix:"; cat "$dir/out"; fails=1; }
[ $fails = 0 ] && echo "ok: :make lists bad.lesson:5 in the quickfix list"
exit $fails
