/*
 * bcryptprimitives.dll for Wine 8 (Debian 12), which lacks it: Go's
 * Windows runtime (since Go 1.22) loads ProcessPrng from it at start-up.
 * CI builds this with mingw-w64 so that the Windows test binaries run
 * under Wine; it is never part of cordon. ProcessPrng fills the buffer
 * from advapi32's RtlGenRandom (SystemFunction036), in chunks it accepts.
 */
#include <windows.h>

typedef BOOLEAN(WINAPI *genrandom_fn)(PVOID, ULONG);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	static genrandom_fn genrandom;
	if (!genrandom) {
		HMODULE advapi = LoadLibraryA("advapi32.dll");
		if (!advapi)
			return FALSE;
		genrandom = (genrandom_fn)GetProcAddress(advapi, "SystemFunction036");
		if (!genrandom)
			return FALSE;
	}
	while (len > 0) {
		ULONG n = len > 0x10000000 ? 0x10000000 : (ULONG)len;
		if (!genrandom(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
