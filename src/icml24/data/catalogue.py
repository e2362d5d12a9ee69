"""The catalogue of the public data sets the project reads: each file's place, upstream URL, sha256 and size.

:data:`DATASETS` records, for every data set a loader reads, where each file lies under the data root, the
upstream URL it comes from, and the sha256 and size it must have (:mod:`icml24.data.fetch` downloads and checks
them).

Checksums, and what they were checked against (each data set's ``checksum_note`` says the same):

- Cora, MUTAG, tiny Shakespeare: hashed from the local copies in ``shared/data``, which are byte for byte the
  files in the upstream repositories (their git blob ids match the upstream trees).
- CiteSeer, and PubMed but ``ind.pubmed.allx``: hashed from the upstream repository's own files.
  ``ind.pubmed.allx``: sha256 and size as recorded by a Git LFS pointer in a third-party copy of the same
  folder whose seven other files match upstream byte for byte; not hashed here.
- Fashion-MNIST: the sha256 of the upstream ``.gz`` files (the bytes torchvision's md5s, also recorded, were
  computed on) and the sha256 of their decompressed content. A file passes when either matches: Debian's
  package recompressed the files (same deflate stream, gzip header without name and time), so its copies
  differ from upstream's as ``.gz`` but not as content.
- Austen: the local texts were converted from the R package janeaustenr; no upstream serves these bytes, so
  the data set is not fetchable from upstream (a mirror of the local copies can serve it).
- Amazon and Coauthor graphs (seed_gnn): no checksum could be computed offline: not fetchable.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass


@dataclass(frozen=True)
class DataFile:
    """One file of a data set.

    Parameters
    ----------
    path : str
        Where it lies under the data root, ``/``-separated (e.g. ``"planetoid/Cora/raw/ind.cora.x"``).
    url : str or None
        The upstream URL it is downloaded from; None when there is none.
    sha256 : str or None
        The sha256 of the bytes the upstream URL serves; None when unknown (the data set is then not fetchable).
    size : int or None
        Their size in bytes; None when unknown.
    content_sha256 : str, optional
        For ``.gz`` files: the sha256 of the decompressed content. A file whose bytes differ from upstream's
        but whose content matches passes too (a recompressed copy).
    content_size : int, optional
        For ``.gz`` files: the decompressed size (a copy whose gzip trailer records it counts as present).
    md5 : str, optional
        The upstream file's md5 as published elsewhere (torchvision's), for the record.
    """

    path: str
    url: str | None
    sha256: str | None
    size: int | None
    content_sha256: str | None = None
    content_size: int | None = None
    md5: str | None = None


@dataclass(frozen=True)
class Dataset:
    """A public data set the project reads from the data root.

    Parameters
    ----------
    name : str
        Its key in :data:`DATASETS` and on the command line (``icml24 data fetch NAME``).
    description : str
        What it is, in a few words.
    licence : str
        Its licence.
    source : str
        The human page it comes from.
    files : tuple of DataFile
        Every file, with its place under the data root, URL, sha256 and size.
    used_by : str, optional
        Which methods read it.
    fetchable : bool, default True
        Whether :func:`fetch` can download it from upstream (a mirror can serve any data set whose files all
        have a sha256).
    checksum_note : str, optional
        What the recorded checksums were checked against.
    hint : str, optional
        How to get it when it is not fetchable.
    """

    name: str
    description: str
    licence: str
    source: str
    files: tuple[DataFile, ...]
    used_by: str = ""
    fetchable: bool = True
    checksum_note: str = ""
    hint: str = ""

    @property
    def size(self) -> int | None:
        """Total size in bytes of the upstream files; None when one is unknown."""
        sizes = [f.size for f in self.files]
        return None if any(s is None for s in sizes) else sum(sizes)

    @property
    def folder(self) -> str:
        """The deepest folder under the data root that holds every file (``/``-separated)."""
        return posixpath.commonpath([posixpath.dirname(f.path) for f in self.files])


# ------------------------------------------------------------------------------------------------ registry
_PLANETOID_URL = "https://github.com/kimiyoung/planetoid/raw/master/data"  # PyG's Planetoid.url
_PLANETOID = {
    # key: (folder name, ((suffix, sha256, size), ...)), in PyG's order of the suffixes
    "cora": (
        "Cora",
        (
            ("x", "23cfa55d91c6f624233f5eb7b6e3f141f1bd2b2ae39608a63cf5d084bb27baab", 22119),
            ("tx", "b9afbaa4a400df991f6f02ef677e1e44da55ffc04801fd02f9e673987829226a", 148025),
            ("allx", "9419ba2f26f5c35243db64aba110e0f35a04851609e0dc5433450676ca6b8543", 257305),
            ("y", "94465c14eb53e04ca262198dcbb2521ee8af60fb3f3d546cd6ca24a511b0e7d1", 4054),
            ("ty", "41f5ac76596a1699cc33f53084a2419e92961c42bb75f36fc38e616d348532ad", 28135),
            ("ally", "2b998f5cc7fedc86e7f97ca2498f47a1ffc1462c29e2d578b23bf3f62b6e7d71", 47959),
            ("graph", "58f13302f39dde8852dad6fe6d15b89b077b6d7f837626bce671ef80344b383d", 59847),
            ("test.index", "297ce89af2b51a6a194181c7dbe1796c6a1cf9cd9349a88383b1b1e227867875", 5000),
        ),
    ),
    "citeseer": (
        "CiteSeer",
        (
            ("x", "d20de19150741e555de0ed037195630fc194114ebc7fd72ced62810148aa22f6", 31087),
            ("tx", "539a8906a2da97628d212f2fdd668c109a8b3f0d36574b59e5d3fd5b5303da21", 260321),
            ("allx", "2ac30345d95c9ec933a817ee0bdd6a5f077f8c184a20e696910192d534414668", 595021),
            ("y", "8ba87e515d8e3ee3cf52f6d2c5b86aa73f11ecad825a808455209ec26cd54924", 3014),
            ("ty", "55e5bd1ba1e733a04598753ad1a8d57957f4b8f89e74519f41f4f4938767e4ce", 24135),
            ("ally", "f704b2d986dde6c2669934de1f3ae5696a6cf9455c0f6b2646a2d135ea0a1c95", 55623),
            ("graph", "d79a4ef9d3e7169aee8946145f6b7306e35bc79bffad26346cfb94e10e9912a7", 61987),
            ("test.index", "2af990671580b6b2df5d158d1038f8292e30c9cd821b5453f399659b25b723d4", 5000),
        ),
    ),
    "pubmed": (
        "PubMed",
        (
            ("x", "fbe9cb5c47200d1b7769a26e579be3b7130b556831f9d850e77c4c74f2599b33", 23172),
            ("tx", "4eb5f5d0f30f26497eb0ac6ac9719d09c67e284f1ed0385c93f3ef27a671da3d", 405505),
            ("allx", "508e538e2abdccdd54c4d3e9f49d638b4af7107d85845f66ddea5a5152658b7e", 7578385),
            ("y", "e6c807633307a07ed659249006536a147c7999c797f11a2560752990181b41b3", 854),
            ("ty", "ee2e0d4819d9fbcc403689c3bf2e49face401b605932f093bc58ab6461130fdd", 12135),
            ("ally", "0c37bbe3b5014ec365e9d393cf4791925e5ed94fb194305d74f064a8d7b50f0e", 224739),
            ("graph", "5b89f0036ca22909471f1e6558eb42fa06e0c730a577bde5b058b40638f81dc9", 471808),
            ("test.index", "b101d421688bbaecbd82e8a18f1e282378d6830f3a37666f28ebc47f844341b5", 6000),
        ),
    ),
}


def _planetoid_files(key: str) -> tuple[DataFile, ...]:
    folder, table = _PLANETOID[key]
    return tuple(
        DataFile(f"planetoid/{folder}/raw/ind.{key}.{s}", f"{_PLANETOID_URL}/ind.{key}.{s}", sha, size)
        for s, sha, size in table
    )


_FASHION_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com"  # torchvision's FashionMNIST.mirrors
_FASHION = (
    # name, sha256 and size of the upstream .gz, sha256 and size of the content, torchvision's md5 of the .gz
    (
        "train-images-idx3-ubyte.gz",
        "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
        26421880,
        "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
        47040016,
        "8d4fb7e6c68d591d4c3dfef9ec88bf0d",
    ),
    (
        "train-labels-idx1-ubyte.gz",
        "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
        29515,
        "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
        60008,
        "25c81989df183df01b3e8a0aad5dffbe",
    ),
    (
        "t10k-images-idx3-ubyte.gz",
        "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
        4422102,
        "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
        7840016,
        "bef4ecab320f06d8554ea6380940ec79",
    ),
    (
        "t10k-labels-idx1-ubyte.gz",
        "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
        5148,
        "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
        10008,
        "bb300cfdad3c16e7a12a480ee83cd310",
    ),
)

_SHAKESPEARE_URL = "https://raw.githubusercontent.com/karpathy/char-rnn/master/data/tinyshakespeare/input.txt"

_SHAKESPEARE = ("86c4e6aa9db7c042ec79f339dcb96d42b0075e16b8fc2e86bf0ca57e2dc565ed", 1115394)

_AUSTEN = (
    ("emma.txt", "7c67b5985c6d0de1efaeb5d342d52cb82c38083c40e2295129e30e87ee690ebe", 883028),
    ("mansfieldpark.txt", "98bc90519cdf4ef663ad7de2734bb529435ef24f7abbde6bb1a50898871dafe9", 883280),
    ("northangerabbey.txt", "51f91bbe0517db8e65cff009b097ce0a1836124c4e0532ac19e6c0cad982abed", 433411),
    ("persuasion.txt", "8061549557aebd2fd6e353d18d9197cb707029112bd52d4d8b174583a925848a", 466854),
    ("prideprejudice.txt", "dfc684d4f857fa938268f9ab9c5567b64bd0691251eca959644adeabe6287a4d", 684768),
    ("sensesensibility.txt", "105e1651fe93bed7130078578efd31e0c557d68667ba672ddc876f735b30fe09", 673688),
)

_SCIP_URL = "https://raw.githubusercontent.com/christopherhojny/SCIP-MPNN/main/data_experiments"
_MUTAG_MODEL = ("a51b879763c668a67d4ef1ac4eeb1517a6d330f39dd1174dd74a26ea1d249979", 55422)
# sha256 and size of graph_MUTAG_<i>.gcinfo, one line per i = 0..187
_MUTAG_INSTANCES = """\
516674f898a833cb8a938738d28ce646029eedf26bc2d681f06a6fb7c976616d 243
02938f3f284f8e19538bdb4412b199845d61d3e9050d6cf439a3fac02e2105fd 173
b4cd027966423324b2c0d6f892c9e7ae083b2bb34b4862f2452ec6600961179b 173
52a842255a6d988ce0314bc08e6710607830c262726d3c5b21fd1249a1c6f7ca 287
a2d0efd74df84b3d95ea2ad3b0d6d981f7574c53ce0a9571b611809f07d28861 135
b8d653a57f16e0c097cd3a70af5816a780de66fae86f29ca3f75ea94764cb9d6 414
0b5081045e4314ed35dbb91c505729db409e5be936aa8309a83baa27792befa3 222
ecaf8a374dab5a85daf5f655477520802e9bbb7a4255230166b0df8a4117c75d 292
6cca01642afc9898a8a5ce6c9eb264d9d32d25e656b55a0e01aa47a953db634d 156
2d0c8b280acb87e65f240d38ab93afdca315543103482f3fefda97d26e3bc800 243
3a3b3c58c2d6aaddecf5222f5192389754ac7fbc87c0f7f18768539f60467036 241
50d4c6f6faa9fbcf6f1bded13d967fd586e667d3319f3d8b08714dda3e21d7f6 296
d5d3a518d86c36cd836809536b27c27b038d48b8c2d0e4704a9b5e34344c95c8 330
304dad6198edeb2b05f75556a3821d9e2213e7401ae1e50002a0a3dca5cbe2fb 173
098bec59342f49ccfa09d53b98976b6f5da330de929d29ddb535ecd23ce9d9dd 285
e3608ef1582f5926245c56018ca51b85229fd41e8bc0d8613dd49928926d0346 330
72599ef9c6be3b37eaa6e96338a65e77b442f21a3446ce29c274fa5d34832cc8 135
1c1e34756cc9046acc5eb4dc4b29179cbc58b808b07caffaf25714f3f02ccdb2 243
15d3402bc47f7fa13ec4c6caf16c874768ab5ec5ee5c1465ceb0fa8ee7e224cb 173
f3e443b9a9559c565e330ceb2928d6d63166938d8673dc5b57f8ff171046699e 260
d4a44bede8a027476b1a3dc0d75f650990bf7513bb94fca4793c27e67863c3b0 250
d0346e87ffa59f079c4a64a976dbba14a18dc8cad38e627f166f4f92aad8f536 247
2e21a002582f097d0deb78e057678db677e9418385c7ab90b345562c44c3c916 357
604aeded839341aaaae656b3110810b88b37c00288b65d5e12e52e2d14a12b0f 441
3d911a922bc6f6d4111dba778c50d4920569e8c0462214adba16bff92822453d 247
7fc95204094d2d49b35b697413efed79edf7115a27e8f9c4e50c2865cb77fabf 161
3add944a054e3870b77fac189abe81ff345bdb1c24088cda70e55140854361be 359
dad52dd093fa8bad6e49f9a666bdaeaed900bd0e39a5b8ed6ba377be55b79ca6 247
35b1e0447d336a1aee03c5f014c69d184a888650cd2926b95011f6ec2fa192cb 335
6fedd322a4f7409fe30aedc1b9a2860122e95ace0ec4de1b61783ecee5477883 359
c1f36e0a62cb6461f6877e2cf17f1b5c54ef2af458b43b0a2db565e3c42a7b5a 332
9643e921f11dd377d3e4604083a62d6b83ece0c6e7e746c6b787670e4880f653 334
7a3a803298806b28e26236ae60d67bea9db75b6681d7c36ebb7ddb674b99ea46 331
dd34b1e5531bded951aae7c3f4a221571bf7c873e7281e4c0d38d537f89b64af 173
12705786946b01cfb9f37fe612de868e7d9cc72607a3f43ca614654f020c44cc 243
75bd4dce97114ed71d2dafab3fe76155d36974837b3a436b89d2f051bc9bdf7a 190
26de43c840e9c1c0ab34b4c0135ed8a7f7ea02aa60a778d878401d8078edfacb 235
4193876e1c61584c50c7b1fbb90a8c1c926265dac1e4f0dd3b47f328c52b4058 203
6ec83e0884eb2607de460ee028678ed6a9148541cd36bd707a2e954e5fcb877f 205
3dba00c2c66cd0d6ef1ca5bba420bbd84aa1017c657d2756fe5da7fbdd8f35d6 173
887f66695c7037b199d7503588d959dfd3760e60d7e347e388ff559e573ddfa6 247
0657f221f438426761b5c871bd90045ed96168ce42dea2d5f796c73fc6b23524 173
fc3f90139c1b867faa20052d41fa50267649e172198461a2cf8b535cae447bf2 287
516674f898a833cb8a938738d28ce646029eedf26bc2d681f06a6fb7c976616d 243
e1b0cf2b1466f2a3cb95f8e7acde589e062cbe34d43c6211cec70c2959db5051 148
49a6edb203dbdc23649157d1dcbe484ca451eac60901072885f82ba91ec00cb8 351
7daa6c53bdb8e6a0d51ec8ab4c8e0072f22a30b8826be9c8337ee46042906245 326
dd2d2aa761dd861f6df900929407cf23da2b486d6c5e9ea2abc6535bbba1b9d3 245
9a0450112329f9ae4674c1366a74010470a2930094b135280cdcb152b3d79501 292
bf00a05aec2f4cdf93bbbc8b9444b33dd937e3cda6844a25a0ae6d41226bd224 218
2808aa70efb24eb9cf319decbf80aff537ccff2999b4e6c52359400d210e1c2b 398
16bb3c74ddcde984553cf51c56137ff3187029e6ca65b4d7f5a7b1eec03f2966 400
2c2cd14968ddcc0f50040ece38528e89b57e086251e2194d9debe862ae2d2d6c 277
b42d0652b40ae64a040977c8f69448e4622d996e6a5475fe39fea13f17ae9f3d 277
1445bf38053e0d1b570c247b04ad0676feff8d006c2d89cf6d809ab9eca05ab8 190
4501f9748e360177476e55f6f9071cfee9626c9118ff50fe449f4f015e7af9e0 245
f37f51ad3c93101d95652623cb5fe48fa40ecab9118eba42b8a0ccc2bcc2ae47 291
81ebad15fa53e6ecf2dd5276db404ae180fd6a45411f0d8109c8ff5907509af1 383
424c1ecf6946918423ac131783dc750e50cf78f75c65f6f812c93587c1c6663f 357
bbdbbbc449107cab7feb922aa40afbbe12140343318b0cef87d130215280b619 259
5d81e3af2329a67040d5107f22511feaf211e24d57bf720536750c3739799874 247
9de5f9134095a0c94d917ac955d6ac7184e6ffe3f95a1b55f4da8a0e1256b8ed 135
c3f52b49b6307d46f9d00351f8b552f1cf592895da0532aab4b33a9ba698310c 325
b8282ca8045cc29879e4f916dc6483c0573942cd65c221cfbf2c89142aebcb58 290
d42ba8fc46da9cc07563e0417099c93a0a7a88a2603ce3493706b2056b1efe7c 216
1f812d9a0d4fe2832373877705206cf27da24af3af56f72712f83d960c01e026 220
f601a335ce2b70d283f0c9faef7207232e100d9ac81b99af1dc6480eee49758f 302
43a2c125c364a265e49ff4ad1e545c680d2723817e31bed8c2492e79e5e9bcc2 359
dfc354bee766093c75b9ef55d0161ecf72fe898e4312a0d5ea4d021ca1c1681b 275
581981def04e35a58a36eb05324265848fd15901cd315eabf6e30c781deff034 188
d97ea11b20a919bd3fbf6b42eb57cc8ec3c3b1582d10824da89fadfd76f3ecd8 398
d981960d1b8b4ac20bd6e45a382da7544cc69ae4969338e2a2b6586d13310668 228
201e34484d624cce45dc20d08493ab358faaa8e352b2028f11d29fd234c7a64a 218
6a56c97b67e7e4a1d358d88993d403cdd01fbc4b6f0ed149938ed30b487dcc52 357
4bb4f02d258162f7ce6ad89bbc0f4b71e812e8016bfb2df16366f11a150f9d39 246
7eefff0a19aa7d33e7b5de060c9124ff96b7ce6a35bb5801fb8b77e7453debad 122
25d717cbfb3e3d699534e5d108cb7c263bf4c0448bc747352059bfc5a2fe2713 218
14610e93756177aaa74477ef601e8ff4433b3c8bc32d22438f2172e0503cd501 220
8006f3b17fa2f3ed67a6cff05fddc86a5b64359b29366e6b8d84fd558807ec56 245
513a432719de60859ec1421871eb38d7731604ec99c3295ba950b348988aec57 285
b37383c9191c655cc8c5e1e47f81bd714b89ddbd8ce2a9fc55e86695aeb5a15d 148
b0669ae52925ad2245034c0649f55c1d9da107d15cdb2554383c0baaba14976d 375
59e551a865487bde03d6d6aa5779af739d77815bd445b9ef279f20419a562582 230
dcee25b82dc75bace58fa34a8444436bdbcf6656ae66dfe5e52cc30b4b155566 135
c036e7256443fb105aeb870742099f6cd2b12986d4100ddcb9eb064a5ce37ae0 357
aec769572fb965740427a8bd6c80182c26d2433771c2c889f571746bee680b41 359
846cffee7f6c67764cf89846dba2d1eb3171439957cc733a6e282e3520ead710 228
766a8e6f81e602b19003f7a8f40000eee18cad9a070260d97468366d88178bc6 148
69b1061dedb9aafb956bc163760b25d1a9580e5e27b2d148f44dde2c0d573184 173
eefede7e5c8e7fb0c09a69173375a9e154c1045a34a9c5e9a4a5abfcd694f475 359
f1eb290cb6ff30be087eeb9afd8ad10d7b78a2b668133872c4ad91aebc332aff 381
5ce1b3fdbf5aa3b06ff1ba4b00787deac81e711002b54521bceb6a00cd447c56 283
7979030ca32ec2123e548b4c3eebd26384f81e63731a6116aac4e58cde430c18 359
0bbe320356ace2f5b43dff202aa4d4494b29c60e1dff27b80e309539f4d14052 287
8240f733692d8fadb6e57fc8acc5b59d473ae34cc00bba03c412f6420440e591 259
222a47f0f84619dd97ce7ee52d623b264c2217f1d65f0eb3511ba01188e835bd 369
3709ec67d04bae7a8fabecf2e03b4907eea6bd5d3b4e88e404506c3567424a50 260
5e6fbea0230af46282cad09ff437719e67559064493b339859fc0a6791316fc1 173
638b49b1efb22937b3178ef618d6551a7b9659e481d39f837f086d7838607e59 213
b88bfa67c5c0f8f4726cb1761a79ce25bc640d2b588bdc81d1c420f8c7de1fb5 220
9ba4bcf6559bddc41a1dc450db3fcd25429b1101c2f06d026ef704e9c93729a7 357
35b0852af94bb50e1b850e1590126ce66ac20e5b49a8c7f16a27fa0b00c838db 374
c1203de073c597f37dd3cf37fe3dd138e7220ec5b32601d0d0edeccadcfaf464 285
f75322ba123232d370c46d3178dff8be036653eb3b0735903fb75e9804dcb6dd 357
3c20cc2952cdf454763bfe7d6b7d45bcdb27cff1424afe3cf89294193d767eb5 245
4ae16f4b1f1bd4ca84d6ce1d7a7e0dcc49199e5cf8793f1b92246d6cf2deffc3 300
dc12f93e8e34d0d16f330ebf60c630e1d296d4cdff72f3c04647c3ac497c3201 375
4fe561733c201d5737cff0fe248f73083150e906fd65f942374b7680b04466fe 287
afa23b9a4f604530b0aee6117807f5049cd08b73b57715d565adbc4d58ef9008 444
44717e19ccced711e6a4359b340b6c44de282c0bcc54d5798744c3d234d4c96e 338
108ad5096e3ae343a719ee0f7eb99329abf42b3ac82e57531a7ffa2a96ee90b3 135
9e202586ad12492dc92e936435a4522c97d09fb706f940e968d0ea4e89ba88c3 211
56cf8e791709789af671c67770aa7173191fbc1b73c453ab4349da6d1ffa5031 161
9cb3994696ccb9713c20be8c4dd8a3a5e0c303bb3caa9983c068f3e92ccfcfa1 216
74c7dbb2e0032a760363ea09f64c6e2b85a63873a35d0ace41cee56d1883dda2 160
458457a25702531741545ec9bf5eaa43fc9c71089024c0357a4ea156b5062f5a 122
2a00b3959e8b220904a5650758ce5440caeea83d0dfb8140e25beba8b21233b7 295
d9f2c51c5e203504cda51b45ce0d14321edb1f1b624d6c1655122d0f8cbea7e7 351
12bef2ea8bf609498bbfc3021a28416878d203d27c2088aebe4deee6f6260ada 291
6a06c95736b32cdd1c72c7acb87fddb258698deb497f39ee3cfaaa70d1cf8142 173
993a72e4c8525b4e30a36ebfbf65708045e87f6ac4517cd036d77d70f02a1547 375
64ea473fb1794121dd6c6235633ddb84b7f33ed26d830096d6809563ea25d683 315
10e4b142fa93d5c9a116ec5e34c8213d59584eef710f98111332b83a6fc84cee 235
49ed9090f5a5316ee452ed7d7785c0b606b0e0a599f63178985f60279a1b0740 135
c1203de073c597f37dd3cf37fe3dd138e7220ec5b32601d0d0edeccadcfaf464 285
2a506639de598b06ded1d4db7b2bc2f3f7fe50b9e9befa8211994f7ff82b5f67 292
b8b4fc465f5e9f9a3fb04a1901c7168b3457e44424e5121051720c7579bcabd5 295
ae3a58fda25f9b1fd5ff8f0dd63eb03dd85d98de9acc7d4502b6b2faabe246b0 211
ef6962e29b1fc92d66b56251ff24d346e106d211d7fce47a0d6dc85e82c9689e 176
c20d6de73a3fd9716f0a8d7e686b7dff93ee2e281f51a3d48c9c11a7de6913ab 135
eb96161d245978c8d773db2e393844d36d3002eccc537033781cc23bfc3db4d4 267
21a88456b06435a7d1593df4e431993f28aad9d4349d86c69387eb5863703a8e 135
f867ab4e73efb0ae0b38be5d2f4347108f1517f6443864555ffc9a5a9aed6287 305
b77e3541db87514554c90c79167456b02399b3cf6e66fbc79cacb8e940eda90b 326
c0413cabebf5aa9c70769194931a27b83ec218549fdd2d074aec39050aefff5f 135
057a9909b0c47caf69b70af30d14f1bbea136db0e2154719a184972a9065af3b 298
b9461ee1fc3f1b9da63442c7625c7b1fe0b1f5726bdfd23cbe7cc70cdd856526 332
9bb31dee4398117641abf66622e7f7fbbcf9e498f5b3706478c949c2f62f2702 173
eb72f8709e47d89ba563ba59793f749f9e5c5dddb8ce6f3316231db999ab2df7 135
88c443c8e31d174f14a998656b892bd1d8d62f0d2fa34fac367b184d7af2f2ae 216
83d908faa080c500262fed8e96eaa4751b64e72d3ccb260645012af6c5a92d2b 135
612c5d17005dbe4e1a6b3e75c570c88c134c770c519c815fb15455199cb4d87c 284
2ccc6a148313ae8e126c7f7ace25e732ed0691a049f5f8adcae62a39812841bd 148
05ad3ba61ec1f7d66a8d10b29610396a2e02deb17e0cbcc8266e62bc8a2fd32e 135
bd3745d41dc598d988b4c934ba57d9deadb39ede23ae2682a4ba6c7b04ef8fe8 220
0703ffa519b3f68b53b259c05a2cdb56e2ffcd0f3d968815fe92bc6e2599a42f 216
027dbe88d67c8e62864aaff57dfcfc56322b83d6a4a239c12b47ee47800be9c1 173
9e202586ad12492dc92e936435a4522c97d09fb706f940e968d0ea4e89ba88c3 211
4994acca04083626f9145b7eba9178b2bd5a2da534b0ff75d7631ad41647493a 292
eecd4c977b9e7dca4ca528173db12a37824ca5d81710784e4bba994ce19c3475 148
d94cc21ef9a2fb3528c336cada158563f400e7ced2e471e3377d2d01840efc95 156
1da9757264c6e5088645faa2f43c4bd3d1176e9a72cd318b32c8c466c54831c0 330
ae3a58fda25f9b1fd5ff8f0dd63eb03dd85d98de9acc7d4502b6b2faabe246b0 211
1164a6f240c893af51d40878fe5bde85287fec1e2007a36b47177b65d2121d10 160
522b5a2f5040952ea70e6de4ba45e6229aabe5d4ef8d3c8a5e54492601622b2c 178
52d7f6d91bf89f1103a62b109880131d884a3e8e28580d6750ddda2fd1f5a0bf 160
56b3bc2f1a4f3d339b481e19ca6dd4d913a2476c2d423198eb00ee12dc3b2882 296
b042529b3617aea8c8d5bc5c9645616b59bfe2a841314cab0e56ebea940b328a 292
002a0f4f1c456b4fc5fa2671c103427ad455c07981ff3a0e914b5d3a8b5a8f9a 296
e2c0056e0027cb8a719fe4e6ee2efd4a5a60ecf7106b8103bacd29e953c45d76 178
df4472e83acacd0b00cb1b4e80a4fab13191218d9211e65bb8813a4714ce93b0 402
0e25f5d580c51c32edc0300107f5f58f6fed8155783e916427349489eb0589e3 334
b77e3541db87514554c90c79167456b02399b3cf6e66fbc79cacb8e940eda90b 326
98e3cfdbe6dbe04a1d05667c00b9c87f386c86f66b3c71a848085ccfed41ba9d 328
9cf3a9f082d6b67e61f7d608001d2541a7ad86bc4f58a288c346a8dd1d9a60d8 285
592f880df49ef8df1589b50560b65e33f2abcfea21ef72b233a2ad8e0c1b4795 349
a6e77a8169bb005590b1945152b77068bf10677348112b95972bbae6d4f4d884 326
8b03442fc18f74e32a36000d79ce9832d36f4bfb81479d0722377872adbd5f5d 135
c4c3f035361d2bbf27c1d93c3681a5c0204298a8422f9917aa487501e8535810 161
37fb45e35468ef93d1e379ea3d90ae8cc82319a5f7ec5b3f612134a7bd327a2e 245
4318da6bd51143f8fb7d27ea08080bee0911e9418cd37f7c69c8e7c087095964 338
7d77630de58bdb322376b398d2d386be0a9ac2f8e9ddb5b021f0f50f83a27630 156
4697ba8b2b00f356ee17ba8b410b9a8a2235b838028e317c1607c7314b398d4a 291
9089d255dee1410cfed793d9b32555c018c111149bb124d500c5a03688688e75 328
b807e26d58b318473452b0826422d6d979471d579c1bf514ae30a208e385a754 320
74c7dbb2e0032a760363ea09f64c6e2b85a63873a35d0ace41cee56d1883dda2 160
f7d24be2610563a9954ee255243c617da6b0ed16591a13d1ba95fcfc1628bd23 292
d3f399a3de3f9cc89733c1a6522afe8e3969036371a5a075e0aaa2646b8eb19e 173
c9a2d66e98f2f174d88e0b7e6e72bc28c6474ac5aebbe68c52dbf790cefe98a9 310
84f14404a572e4a92a23011ce3a9d84cb127a328509e932044a0bc2eee226eed 444
b353f266b96daeeda2d31203972583cba7b90cb15a0cff5ebd9bf6f7204a933b 135
29a73b624ac0089285e19f5d4995477b2a352d37c19a96aa805c36d68299b11b 188
76d642e68e96b43bb9c018e9bfe23fa7095f5b4e2b33508d2f983c4e7627a025 326
cb0494e9374f0d34de4eb800ca3817590cf28cc50f6b18543473a6a47713c10b 328
147fa51133edd9cf87f88b493fc47fe91185195f77b10f507621eb210f3e4b97 165
1a5ce200564de73e98ccbbd753935d744cf255ffeacfecb491a0b48d35fea68b 160
5fb23ab900172ee347fb203488cfdac1c4b12079c20ed5ce510d08f9dfd103a1 317
7233a2fcdf732681b9a6bdd0a3b9e5d440588bc5f90bf5ae343adcd89356d9e3 230
"""


def _mutag_files() -> tuple[DataFile, ...]:
    sha, size = _MUTAG_MODEL
    model = DataFile("scip_mpnn/MUTAG/model_MUTAG.json", f"{_SCIP_URL}/trained_models/model_MUTAG.json", sha, size)
    instances = tuple(
        DataFile(
            f"scip_mpnn/MUTAG/instances/graph_MUTAG_{i}.gcinfo",
            f"{_SCIP_URL}/graph_classification_instances/graph_MUTAG_{i}.gcinfo",
            line.split()[0],
            int(line.split()[1]),
        )
        for i, line in enumerate(_MUTAG_INSTANCES.splitlines())
    )
    return (model, *instances)


_NPZ_URL = "https://github.com/shchur/gnn-benchmark/raw/master/data/npz"  # PyG's Amazon and Coauthor


def _npz(name: str, folder: str, file: str, what: str, pyg: str) -> Dataset:
    return Dataset(
        name=name,
        description=what,
        licence="see github.com/shchur/gnn-benchmark",
        source="github.com/shchur/gnn-benchmark (data/npz/)",
        files=(DataFile(f"{folder}/{file}", f"{_NPZ_URL}/{file}", None, None),),
        used_by="seed_gnn",
        fetchable=False,
        checksum_note="no checksum: the upstream file could not be hashed offline",
        hint=f"PyG's {pyg} downloads it; put {file} in <data root>/{folder}/",
    )


_ALL = (
    Dataset(
        name="fashion-mnist",
        description="Fashion-MNIST, 70,000 28x28 images",
        licence="MIT (Zalando SE)",
        source="github.com/zalandoresearch/fashion-mnist",
        files=tuple(
            DataFile(f"fashion-mnist/FashionMNIST/raw/{n}", f"{_FASHION_URL}/{n}", sha, size, csha, csize, md5)
            for n, sha, size, csha, csize, md5 in _FASHION
        ),
        used_by="desa, group_dro, spurious_memorization, red_xai, ensemble_equivariance, deep_align, "
        "feedback_alignment",
        checksum_note="sha256 of the upstream .gz (its md5 is torchvision's) or of the decompressed content "
        "(Debian's copies are recompressed: same deflate stream, gzip header without name and time)",
    ),
    Dataset(
        name="cora",
        description="Cora citation graph (Planetoid split)",
        licence="MIT (planetoid repository)",
        source="github.com/kimiyoung/planetoid",
        files=_planetoid_files("cora"),
        used_by="seed_gnn, graph_transformer",
        checksum_note="hashed from the local copy, byte-identical to the upstream repository's files",
    ),
    Dataset(
        name="citeseer",
        description="CiteSeer citation graph (Planetoid split)",
        licence="MIT (planetoid repository)",
        source="github.com/kimiyoung/planetoid",
        files=_planetoid_files("citeseer"),
        used_by="seed_gnn",
        checksum_note="hashed from the upstream repository's files",
    ),
    Dataset(
        name="pubmed",
        description="PubMed citation graph (Planetoid split)",
        licence="MIT (planetoid repository)",
        source="github.com/kimiyoung/planetoid",
        files=_planetoid_files("pubmed"),
        used_by="seed_gnn",
        checksum_note="hashed from the upstream repository's files, except ind.pubmed.allx: sha256 and size from "
        "a Git LFS pointer in a third-party copy whose seven other files match upstream (not hashed here)",
    ),
    Dataset(
        name="mutag",
        description="SCIP-MPNN's MUTAG model and 188 graphs",
        licence="Apache-2.0",
        source="github.com/christopherhojny/SCIP-MPNN (data_experiments/)",
        files=_mutag_files(),
        used_by="gnn_certify",
        checksum_note="hashed from the local copy, byte-identical to the upstream repository's files",
    ),
    Dataset(
        name="tinyshakespeare",
        description="tiny Shakespeare, 1.1 MB of plain text",
        licence="public domain text; MIT repository",
        source="github.com/karpathy/char-rnn (data/tinyshakespeare/)",
        files=(DataFile("tinyshakespeare/input.txt", _SHAKESPEARE_URL, *_SHAKESPEARE),),
        used_by="jetfire, tiny_lm",
        checksum_note="hashed from the local copy, byte-identical to the upstream repository's file",
    ),
    Dataset(
        name="austen",
        description="Jane Austen's six novels, plain text",
        licence="public domain text; MIT packaging",
        source="CRAN package janeaustenr (Debian package r-cran-janeaustenr)",
        files=tuple(DataFile(f"austen/{n}", None, sha, size) for n, sha, size in _AUSTEN),
        used_by="tiny_lm",
        fetchable=False,
        checksum_note="hashed from the local copy, converted from janeaustenr's R data: no upstream serves these bytes",
        hint="apt-get install r-cran-janeaustenr and write each novel's lines into <data root>/austen/<novel>.txt "
        "(R: writeLines(janeaustenr::emma, 'emma.txt')); the sha256s recorded are of the copy made here, which "
        "another conversion may not match",
    ),
    _npz(
        "amazon-computers",
        "amazon/Computers/raw",
        "amazon_electronics_computers.npz",
        "Amazon Computers co-purchase graph",
        "Amazon(name='Computers')",
    ),
    _npz(
        "amazon-photo",
        "amazon/Photo/raw",
        "amazon_electronics_photo.npz",
        "Amazon Photo co-purchase graph",
        "Amazon(name='Photo')",
    ),
    _npz("coauthor-cs", "coauthor/CS/raw", "ms_academic_cs.npz", "Coauthor CS graph", "Coauthor(name='CS')"),
    _npz(
        "coauthor-physics",
        "coauthor/Physics/raw",
        "ms_academic_phy.npz",
        "Coauthor Physics graph",
        "Coauthor(name='Physics')",
    ),
)

DATASETS: dict[str, Dataset] = {d.name: d for d in _ALL}
"""Every data set the project reads from the data root, by name."""


__all__ = ["DATASETS", "DataFile", "Dataset"]
