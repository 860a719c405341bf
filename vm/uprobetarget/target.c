/*
 * uprobetarget: the program the VM suite's uprobes probe (vmtest/uprobe_test.go). Built static
 * by `make vm-bins` (build/uprobetarget, and build/uprobetarget-pie as a static PIE) and
 * shipped into the VM as /bin/uprobetarget and /bin/uprobetarget-pie.
 *
 *   uprobetarget N A B    calls ftctl_add(A+i, B) N times (i = 0..N-1), then
 *                         ftctl_greet("hello uprobe"), and prints the last sum
 *
 * ftctl_add takes two arguments (%di, %si on x86-64) and returns their sum ($retval);
 * ftctl_greet takes a string (+0(%di):string). noinline and the volatile sink keep both real
 * calls at -O1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

volatile long sink;

__attribute__((noinline)) long ftctl_add(long a, long b)
{
	sink = a;
	return a + b;
}

__attribute__((noinline)) size_t ftctl_greet(const char *s)
{
	sink = (long)s;
	return strlen(s);
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1;
	long a = argc > 2 ? atol(argv[2]) : 1;
	long b = argc > 3 ? atol(argv[3]) : 2;
	long r = 0;
	for (long i = 0; i < n; i++)
		r = ftctl_add(a + i, b);
	ftctl_greet("hello uprobe");
	printf("%ld\n", r);
	return 0;
}
