" Vim compiler file
" Compiler:    shardlab check (lessons, see shardlab-lesson(5))
" :make checks the lesson being edited; errors read FILE:LINE: message.

if exists("current_compiler")
  finish
endif
let current_compiler = "shardlab"

if exists(":CompilerSet") != 2
  command -nargs=* CompilerSet setlocal <args>
endif

CompilerSet makeprg=shardlab\ check\ %
CompilerSet errorformat=%f:%l:\ %m,%-G%.%#
