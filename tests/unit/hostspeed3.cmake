# all_reduce and reduce_scatter up to the mails' size travel in the ranks' mails, one element
# more through the slots (tests/unit/host_mail.c).
mg_test(NAME host_mail SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/host_mail.c LABELS host)
# A deadline taken on the coarse clock is never earlier than one taken on the precise clock
# (tests/unit/clock_coarse.c).
mg_test(NAME clock_coarse SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/clock_coarse.c)
