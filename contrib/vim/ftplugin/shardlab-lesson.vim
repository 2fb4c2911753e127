" Vim filetype plugin: shardlab lessons
" :make runs `shardlab check` on the lesson (compiler/shardlab.vim).

if exists("b:did_ftplugin")
  finish
endif
let b:did_ftplugin = 1

compiler shardlab
setlocal commentstring=#\ %s
let b:undo_ftplugin = "setlocal makeprg< errorformat< commentstring<"
