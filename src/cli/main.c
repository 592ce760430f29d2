#include <stdio.h>
int main(void) { puts("jobset"); return 0; }
