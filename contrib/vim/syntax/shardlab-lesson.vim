" Vim syntax file
" Language:    shardlab lesson (see shardlab-lesson(5))
" Install:     make install (configure --with-vimdir), or add contrib/vim to runtimepath

if exists("b:current_syntax")
  finish
endif

syn case match

" A command is a keyword in column 1; indented lines continue the one above.
syn match slComment      "^\s*#.*$" contains=slTodo
syn keyword slTodo       TODO FIXME XXX contained

syn match slHeader       "^\(title\|minutes\|about\|track\)\>" nextgroup=slText skipwhite
syn match slNarration    "^\(say\|pause\)\>" nextgroup=slText skipwhite
syn match slScenario     "^setup\>" nextgroup=slSettings skipwhite
syn match slRun          "^\(run\|step\|show\)\>" nextgroup=slRunArgs skipwhite
syn match slCheck        "^\(check\|let\)\>" nextgroup=slExpr skipwhite
syn match slFlow         "^\(label\|jump\|finish\)\>" nextgroup=slLabelName skipwhite
syn match slBlock        "^\(question\|menu\|explore\|end\)\>" nextgroup=slText skipwhite
syn match slBlockLine    "^\(option\|correct\|explain\|answer\|unit\|right\|wrong\|item\|knob\|until\|hint\|demo\|mistake\)\>" nextgroup=slText skipwhite

" Continuation lines hold text too.
syn match slText         ".*$" contained contains=slFigure,slEmph,slCode,slSetting,slNumber
syn match slContinuation "^\s\+[^# \t].*$" contains=slFigure,slEmph,slCode,slSetting,slNumber
syn match slSettings     ".*$" contained contains=slSetting
syn match slRunArgs      ".*$" contained contains=slRunKind,slNumber
syn match slExpr         ".*$" contained contains=slNumber,slOperator,slWord
syn match slLabelName    "[a-z0-9_-]\+" contained

syn match slFigure       "{[^{}]*}"
syn match slFigure       "{{\|}}"
syn match slEmph         "\*[^* ][^*]*\*"
syn match slCode         "`[^`]*`"
syn match slSetting      "\<[a-z-]\+=" contained
syn keyword slRunKind    matmul collective contained
syn match slNumber       "\<\d\+\(\.\d\+\)\?\([eE][-+]\?\d\+\)\?\([A-Za-z%/]\+\)\?" contained
syn match slOperator     "==\|!=\|<=\|>=\|<\|>" contained
syn keyword slWord       within and or if as yes no min max abs contained

hi def link slComment      Comment
hi def link slTodo         Todo
hi def link slHeader       PreProc
hi def link slNarration    Statement
hi def link slScenario     Type
hi def link slRun          Type
hi def link slCheck        Conditional
hi def link slFlow         Label
hi def link slLabelName    Identifier
hi def link slBlock        Structure
hi def link slBlockLine    Keyword
hi def link slFigure       Special
hi def link slEmph         Underlined
hi def link slCode         String
hi def link slSetting      Identifier
hi def link slRunKind      Constant
hi def link slNumber       Number
hi def link slOperator     Operator
hi def link slWord         Keyword

let b:current_syntax = "shardlab-lesson"
