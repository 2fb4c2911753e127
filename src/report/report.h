#ifndef SL_REPORT_H
#define SL_REPORT_H
#endif
