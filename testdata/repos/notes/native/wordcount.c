/* A fast word counter for large note exports, used by scripts. */
#include <ctype.h>
#include <stdio.h>

#define BUF_SIZE 65536

/* count_words counts runs of non-space characters read from f. */
static long count_words(FILE *f)
{
	char buf[BUF_SIZE];
	long words = 0;
	int in_word = 0;
	size_t n;

	while ((n = fread(buf, 1, sizeof buf, f)) > 0) {
		for (size_t i = 0; i < n; i++) {
			if (isspace((unsigned char)buf[i])) {
				in_word = 0;
			} else if (!in_word) {
				in_word = 1;
				words++;
			}
		}
	}
	return words;
}

int main(int argc, char **argv)
{
	FILE *f = argc > 1 ? fopen(argv[1], "rb") : stdin;
	if (f == NULL) {
		perror(argv[1]);
		return 1;
	}
	printf("%ld\n", count_words(f));
	return 0;
}
