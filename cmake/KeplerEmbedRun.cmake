# Script mode helper of kepler_embed_text(): IN, OUT, SYMBOL.
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n  " bytes "${bytes}")
file(WRITE ${OUT} "/* generated from ${IN}; do not edit */\nconst char ${SYMBOL}[] = {\n  ${bytes}0x00\n};\n")
