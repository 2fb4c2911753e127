" shardlab lessons: files ending in .lesson
autocmd BufRead,BufNewFile *.lesson setfiletype shardlab-lesson
