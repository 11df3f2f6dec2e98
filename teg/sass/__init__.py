"""teg.sass — parse ``cuobjdump -sass`` / ``nvdisasm`` text (and the GT200 sm_1x dialect) into
:class:`Program` objects: per instruction the guard, opcode and modifiers, operands, the registers
read and written, branch targets and the decoded scheduling control field.

Public API: :func:`parse_text`, :func:`parse_file`, :class:`SassParseError`, :class:`Program`,
:class:`Instruction`, :class:`Operand`, :class:`Control`.
"""

from teg.sass.errors import DisassemblyError, SassParseError, ToolNotFoundError
from teg.sass.parser import parse_text
from teg.sass.program import Control, Instruction, Operand, Program
from teg.sass.reader import parse_file

__all__ = ["parse_text", "parse_file", "SassParseError", "ToolNotFoundError", "DisassemblyError",
           "Program", "Instruction", "Operand", "Control"]
